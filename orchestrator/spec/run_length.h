// The fields of a resolved run config (JSON) that set its length, read in one place for the
// orchestrator: the live ETA (execute/live_progress.cc), the expected seconds of the expansion
// (expansion.cc) and the branch study's trunk (branch_study.cc). The arithmetic is
// base/run_values.h's LengthOf, the trainer's own.
//
//   run_values::RunLength n = run_values::LengthOf(RunShapeOf(run.config));
//   n.total_steps;   // 0: only a seconds budget bounds the run
#ifndef BATCHLAB_ORCHESTRATOR_SPEC_RUN_LENGTH_H_
#define BATCHLAB_ORCHESTRATOR_SPEC_RUN_LENGTH_H_

#include <nlohmann/json.hpp>

#include "base/run_values.h"

namespace batchlab::orchestrator {

// batch_size, world_size, comm.sync, batch_schedule and budget of `config` (absent: 0, 1,
// allreduce, none, no limit), and, when the budget has epochs, the training set's size
// (DatasetSize; 0 when unknown).
run_values::RunShape RunShapeOf(const nlohmann::json& config);

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_SPEC_RUN_LENGTH_H_
