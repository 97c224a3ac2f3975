#include "orchestrator/spec/run_identity.h"

#include <fmt/format.h>

namespace batchlab::orchestrator {

uint64_t Fnv1a64(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV offset basis
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;  // FNV prime
  }
  return h;
}

std::string Hex16(uint64_t value) { return fmt::format("{:016x}", value); }

std::string CanonicalJson(const nlohmann::json& value) { return value.dump(); }

std::string RunIdOf(const nlohmann::json& resolved_config) {
  nlohmann::json c = resolved_config;
  c.erase("run_id");
  c.erase("attempt");
  c.erase("metrics_path");
  c.erase("checkpoint");  // when a run saves its state changes nothing it computes
  return Hex16(Fnv1a64(CanonicalJson(c)));
}

std::string SpecHashOf(const nlohmann::json& spec) { return Hex16(Fnv1a64(CanonicalJson(spec))); }

}  // namespace batchlab::orchestrator
