// Checks a spec's text before it becomes a JSON tree: its size, how deep it nests, and that no
// object repeats a key (JSON parsers silently keep the last of two equal keys, so
// {"batch_size": 64, "batch_size": 6400} would run something other than what the reader sees).
// One SAX pass, no tree; errors name the JSON path:
//
//   Status s = CheckJsonText(R"({"base": {"lr": {"base": 1, "base": 2}}})");
//   // -> INVALID_ARGUMENT "base.lr.base: duplicate key (an object may name a field once) ..."
//
// Text that is not JSON at all passes here; the parser that follows reports it with its position.
#ifndef BATCHLAB_ORCHESTRATOR_SPEC_JSON_GUARD_H_
#define BATCHLAB_ORCHESTRATOR_SPEC_JSON_GUARD_H_

#include <cstddef>
#include <string>

#include "base/json_path.h"  // JoinPath, Escaped (used with these checks)
#include "base/status.h"

namespace batchlab::orchestrator {

constexpr size_t kMaxSpecBytes = 16 << 20;  // 16 MiB
constexpr int kMaxJsonDepth = 64;           // nested objects and arrays

Status CheckJsonText(const std::string& text);

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_SPEC_JSON_GUARD_H_
