// Straggler emulation (see straggler.h).
#include "runner/sync/straggler.h"

#include <chrono>
#include <thread>

#include "runner/data/shard_sampler.h"

namespace batchlab::runner {
namespace {

constexpr uint64_t kStragglerStream = 0x5354524147ULL;  // "STRAG": its own seed stream

double Uniform01(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

}  // namespace

Straggler::Straggler(std::optional<CommConfig::Straggler> config, int64_t seed, int rank,
                     int world)
    : config_(config), seed_(seed), rank_(rank), world_(world) {}

int Straggler::SlowRank(int64_t step) const {
  if (!config_ || !(config_->delay_ms > 0)) return -1;
  const uint64_t draw = DeriveSeed(static_cast<uint64_t>(seed_), kStragglerStream,
                                   static_cast<uint64_t>(step));
  if (Uniform01(draw) >= config_->probability) return -1;
  if (config_->rank != CommConfig::Straggler::kRandomRank) return static_cast<int>(config_->rank);
  return static_cast<int>(DeriveSeed(draw, 1) % static_cast<uint64_t>(world_));
}

double Straggler::MaybeDelay(int64_t step) const {
  if (SlowRank(step) != rank_) return 0;
  const auto delay = std::chrono::duration<double, std::milli>(config_->delay_ms);
  std::this_thread::sleep_for(delay);
  return config_->delay_ms / 1000.0;
}

}  // namespace batchlab::runner
