// comm.sync as a value, parsed once (docs/sync.md): how the ranks of a run combine their work.
// The trainer branches on this enum, never on the config's string.
//
//   SyncMode mode = ParseSyncMode(config.comm.sync);   // BadConfig naming comm.sync if unknown
//   if (IsParameterServer(mode)) { ... }               // async_ps, backup: rank 0 serves
#ifndef BATCHLAB_RUNNER_CONFIG_SYNC_MODE_H_
#define BATCHLAB_RUNNER_CONFIG_SYNC_MODE_H_

#include <string>

#include "runner/config/runner_error.h"

namespace batchlab::runner {

enum class SyncMode {
  kAllreduce,  // gradients averaged every step (gradient_buckets.h)
  kLag,        // one-step-stale gradients (sync/lagged_gradient.h)
  kLocalSgd,   // parameters averaged every comm.sync_every steps (sync/parameter_average.h)
  kAsyncPs,    // rank 0 a parameter server, first gradient wins (sync/parameter_server.h)
  kBackup,     // rank 0 a parameter server, the slowest backup_workers dropped (the same)
};

inline SyncMode ParseSyncMode(const std::string& name) {
  if (name == "allreduce") return SyncMode::kAllreduce;
  if (name == "lag") return SyncMode::kLag;
  if (name == "local_sgd") return SyncMode::kLocalSgd;
  if (name == "async_ps") return SyncMode::kAsyncPs;
  if (name == "backup") return SyncMode::kBackup;
  throw BadConfig("comm.sync: unknown mode \"" + name +
                  "\"; use one of allreduce, lag, local_sgd, async_ps, backup");
}

inline bool IsParameterServer(SyncMode mode) {
  return mode == SyncMode::kAsyncPs || mode == SyncMode::kBackup;
}

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_CONFIG_SYNC_MODE_H_
