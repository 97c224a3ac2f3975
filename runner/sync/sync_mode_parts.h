// Each sync mode's implementation, one entry per mode of base/sync_mode.h's table (which names the
// modes and says what each can do, without LibTorch): a collective mode makes a StepExchange
// (step_exchange.h) that every rank runs in the trainer's collective loop; a parameter-server mode
// makes the server's UpdateRule (parameter_server.h) for the trainer's server and worker loops.
//
//   const SyncModeParts& parts = PartsOf(config.comm.sync);
//   if (parts.exchange != nullptr) exchange = parts.exchange(std::move(context));
#ifndef BATCHLAB_RUNNER_SYNC_SYNC_MODE_PARTS_H_
#define BATCHLAB_RUNNER_SYNC_SYNC_MODE_PARTS_H_

#include <cstdint>
#include <memory>

#include "base/sync_mode.h"
#include "runner/sync/parameter_server.h"
#include "runner/sync/step_exchange.h"

namespace batchlab::runner {

struct SyncModeParts {
  SyncMode mode;
  // A collective mode's exchange (null for a parameter-server mode).
  std::unique_ptr<StepExchange> (*exchange)(SyncContext context);
  // A parameter-server mode's update rule (null for a collective mode).
  std::unique_ptr<UpdateRule> (*update_rule)(int world, int64_t backup_workers);
};

const SyncModeParts& PartsOf(SyncMode mode);

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_SYNC_SYNC_MODE_PARTS_H_
