// The implementation of each sync mode (see sync_mode_parts.h).
#include "runner/sync/sync_mode_parts.h"

#include <string>
#include <vector>

#include "runner/config/runner_error.h"

namespace batchlab::runner {

const SyncModeParts& PartsOf(SyncMode mode) {
  static const std::vector<SyncModeParts> kParts = {
      {SyncMode::kAllreduce, MakeAllreduceExchange, nullptr},
      {SyncMode::kLag, MakeLagExchange, nullptr},
      {SyncMode::kLocalSgd, MakeLocalSgdExchange, nullptr},
      {SyncMode::kAsyncPs, nullptr, MakeFirstArrival},
      {SyncMode::kBackup, nullptr, MakeBackupQuorum},
  };
  for (const SyncModeParts& parts : kParts) {
    if (parts.mode == mode) return parts;
  }
  throw RunnerError(RunnerError::Kind::kInternal,
                    std::string("comm.sync \"") + SyncModeName(mode) +
                        "\" has no implementation in runner/sync/sync_mode_parts.cc");
}

}  // namespace batchlab::runner
