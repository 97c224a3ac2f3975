// RunStageName and PlannedRecord (see run_table.h).
#include "orchestrator/execute/run_table.h"

namespace batchlab::orchestrator {

const char* RunStageName(RunStage stage) {
  switch (stage) {
    case RunStage::kPlanned:
      return "planned";
    case RunStage::kHeld:
      return "held";
    case RunStage::kQueued:
      return "queued";
    case RunStage::kRunning:
      return "running";
    case RunStage::kDone:
      return "done";
    case RunStage::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

results::RunRecord PlannedRecord(const PlannedRun& run, int64_t sweep_id) {
  results::RunRecord rec;
  rec.id = run.id;
  rec.sweep_id = sweep_id;
  rec.ordinal = run.ordinal;
  rec.config_json = run.config.dump();
  rec.params = run.params;
  return rec;
}

}  // namespace batchlab::orchestrator
