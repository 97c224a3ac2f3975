// Straggler emulation (config comm.straggler): on a delayed step, one rank computes for
// delay_ms longer. Whether a step is delayed and which rank is slow ("random") are drawn from the
// run seed and the step, so every rank agrees without a message, and a rerun repeats them.
//
//   Straggler slow(config.comm.straggler, config.seed, rank, world);
//   double slept = slow.MaybeDelay(step);   // seconds this rank slept at this step (often 0)
#ifndef BATCHLAB_RUNNER_SYNC_STRAGGLER_H_
#define BATCHLAB_RUNNER_SYNC_STRAGGLER_H_

#include <cstdint>
#include <optional>

#include "runner/comm/communicator.h"

namespace batchlab::runner {

class Straggler {
 public:
  Straggler(std::optional<CommConfig::Straggler> config, int64_t seed, int rank, int world);
  // The rank slowed at `step` (1-based), or -1 when the step is not delayed.
  int SlowRank(int64_t step) const;
  // Sleeps delay_ms if this rank is the slow one at `step`; returns the seconds slept.
  double MaybeDelay(int64_t step) const;

 private:
  std::optional<CommConfig::Straggler> config_;
  int64_t seed_;
  int rank_;
  int world_;
};

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_SYNC_STRAGGLER_H_
