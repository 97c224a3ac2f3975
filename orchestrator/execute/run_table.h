// The executor's table of runs (sweep_executor.cc): one RunSlot per planned run, indexed like the
// plan (and like the executor's PruneBook, whose Add returns the same index), instead of parallel
// vectors. A slot holds what this call of the executor knows of its run beyond the database: its
// stage, its attempt and failure counts, the step at which it met its target, its LR-search group.
//
// A run's stage (RunStage) moves, within one call of ExecuteSweep:
//   planned -> done       resumed finished (or recovered from its end line), or a run of an
//                         earlier version of the sweep: skipped
//   planned -> held       a branch: it waits for its trunk's checkpoint
//   planned -> queued     anything else (a run interrupted by a killed orchestrator included)
//   held    -> queued     its trunk's checkpoint exists
//   held    -> done       its trunk ended without that checkpoint (failed)
//   queued  -> running    launched
//   queued  -> queued     it could not be launched and has a retry left
//   queued  -> done       pruned before it started, or not launched with no retry left
//   running -> done       it finished (completed, target_reached, diverged, budget_exhausted,
//                         pruned, stalled), or failed or timed out with no retry left
//   running -> queued     failed or timed out with a retry left (after a backoff), or preempted
//                         (at once, no retry used)
//   running -> cancelled  the sweep was stopped (it runs again in a later call)
// kDone and kCancelled are final in this call. "Done" is what the LR search waits for (a search
// group's next round) and what a held branch checks of its trunk.
//
//   std::vector<RunSlot> runs(plan.runs.size());
//   runs[i].stage = RunStage::kQueued;
//   if (runs[i].done()) ...
#ifndef BATCHLAB_ORCHESTRATOR_RUN_TABLE_H_
#define BATCHLAB_ORCHESTRATOR_RUN_TABLE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "orchestrator/spec/expansion.h"
#include "results/store.h"

namespace batchlab::orchestrator {

enum class RunStage { kPlanned, kHeld, kQueued, kRunning, kDone, kCancelled };

const char* RunStageName(RunStage stage);  // "planned", "held", "queued", ...

struct RunSlot {
  RunStage stage = RunStage::kPlanned;
  int attempt = 0;             // the last attempt started, in this call or before (0: none)
  int failures = 0;            // failed attempts in this call (for resources.retries)
  std::optional<int64_t> hit;  // once done, with pruning or an LR search: the step that met
                               // its target (nullopt: not met, or no target)
  std::string search_group;    // LR search: its group (swept values but the LR and the seed)

  bool done() const { return stage == RunStage::kDone; }
};

// The database's record of a planned run before it ever ran (pending, no attempt).
results::RunRecord PlannedRecord(const PlannedRun& run, int64_t sweep_id);

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_RUN_TABLE_H_
