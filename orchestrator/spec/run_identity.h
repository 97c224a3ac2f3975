// Stable identities: a run's id is a hash of its canonical resolved config, a spec's hash is the
// hash of the canonical spec. Canonical JSON = nlohmann::json::dump() of the value with object
// keys sorted (nlohmann::json keeps keys in a std::map), no whitespace, numbers as parsed (1 and
// 1.0 differ). The hash is 64-bit FNV-1a over those bytes, printed as 16 lowercase hex digits.
//
//   std::string id = RunIdOf(resolved_config);   // ignores run_id, attempt, metrics_path, checkpoint
//   // the same for {"a":1,"b":2} and { "b" : 2, "a" : 1 }
#ifndef BATCHLAB_ORCHESTRATOR_SPEC_RUN_IDENTITY_H_
#define BATCHLAB_ORCHESTRATOR_SPEC_RUN_IDENTITY_H_

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace batchlab::orchestrator {

uint64_t Fnv1a64(std::string_view bytes);
std::string Hex16(uint64_t value);

// Sorted keys, no whitespace; works for ordered_json input too.
std::string CanonicalJson(const nlohmann::json& value);

// The run id of a resolved config: the hash of the config without run_id, attempt, metrics_path
// and checkpoint (its cadence changes nothing the run computes; resume is bit for bit).
std::string RunIdOf(const nlohmann::json& resolved_config);

// The hash of a spec (the whole parsed document).
std::string SpecHashOf(const nlohmann::json& spec);

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_SPEC_RUN_IDENTITY_H_
