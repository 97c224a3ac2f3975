// The executor's table of runs (sweep_executor.cc): everything one call of the executor knows of
// its runs beyond the database, in one place. One RunSlot per planned run, indexed like the plan
// (and like the executor's PruneBook, whose Add returns the same index); the attempts in flight,
// in the order they started; which runs are held (branches), which the branch analysis found
// prunable, and the LR search's groups and rounds. The executor decides; the table only keeps
// the books, and keeps them consistent: a run's stage changes only through Transition, which
// refuses an edge the executor never takes (an InternalError naming it: a bug, said out loud).
//
// A run's stage (RunStage) moves, within one call of ExecuteSweep:
//   planned -> done       resumed finished (or recovered from its end line), or a run of an
//                         earlier version of the sweep: not run (skipped if it finished there)
//   planned -> held       a branch: it waits for its trunk's checkpoint
//   planned -> queued     anything else (a run interrupted by a killed orchestrator included)
//   held    -> queued     its trunk's checkpoint exists
//   held    -> done       its trunk ended without that checkpoint (failed), or the branch
//                         analysis pruned it
//   queued  -> running    launched (Start)
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
//   RunTable table;
//   size_t i = table.Add(run.id, std::nullopt);
//   BATCHLAB_RETURN_IF_ERROR(table.Transition(i, RunStage::kQueued));
//   if (table[i].done()) ...
#ifndef BATCHLAB_ORCHESTRATOR_EXECUTE_RUN_TABLE_H_
#define BATCHLAB_ORCHESTRATOR_EXECUTE_RUN_TABLE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "orchestrator/execute/attempt_policies.h"
#include "orchestrator/launch/launcher.h"
#include "orchestrator/spec/expansion.h"
#include "results/store.h"

namespace batchlab::orchestrator {

enum class RunStage { kPlanned, kHeld, kQueued, kRunning, kDone, kCancelled };

const char* RunStageName(RunStage stage);  // "planned", "held", "queued", ...

// Whether a run may move from `from` to `to` (the edges above).
bool IsAllowedTransition(RunStage from, RunStage to);

struct RunSlot {
  RunStage stage = RunStage::kPlanned;
  int attempt = 0;             // the last attempt started, in this call or before (0: none)
  int failures = 0;            // failed attempts in this call (for resources.retries)
  std::optional<int64_t> hit;  // once done, with pruning or an LR search: the step that met
                               // its target (nullopt: not met, or no target)
  std::string search_group;    // LR search: its group (swept values but the LR and the seed)
  // A branch the branch study's analysis can do without (branch_pruning.h): why. It is never
  // started, or asked to stop.
  std::optional<std::string> branch_prune;

  bool done() const { return stage == RunStage::kDone; }
};

// One attempt in flight (its run is RunStage::kRunning). Its flags are facts, not a state: several
// can hold at once (an attempt may write its end line, hang and then time out), so they are kept
// apart; when the attempt ends they become its AttemptReport, and DecideAttempt's rules
// (attempt_verdict.h) say which wins.
struct InFlight {
  size_t index = 0;  // its run's index in the table
  int attempt = 0;
  std::unique_ptr<Job> job;
  std::string dir;
  double started = 0;
  LiveFacts live;  // deadline, stop file, end line, signals sent (attempt_policies.h)
  double last_ingest = 0;
  bool saw_end = false;
  std::string end_outcome;  // the `end` line's outcome once ingested
  int slots = 1;
  std::vector<int> gpu_ids;    // the GPUs it holds (gpu_slots.h), released when it ends
  int port = 0;                // MASTER_PORT of a user program's ranks (0: none)
  std::string prune_reason;    // why its stop file was written (pruning.h, the stall rule)
  int64_t stop_from_step = 0;  // the bound last written to its prune_at file (0: none)
  bool stalled = false;        // its stop file was the stall rule's, not pruning's
};

class RunTable {
 public:
  // Appends run `id` (the plan's next run), kPlanned, in LR search group `search_group`
  // (nullopt: no LR search; "" is a group); returns its index.
  size_t Add(const std::string& id, const std::optional<std::string>& search_group);
  size_t size() const { return slots_.size(); }
  const RunSlot& operator[](size_t i) const { return slots_[i]; }
  std::optional<size_t> IndexOf(const std::string& id) const;

  // Moves run i to `to`; an edge not in the list above is refused (InternalError) and changes
  // nothing. Entering kRunning is Start's alone.
  Status Transition(size_t i, RunStage to);

  // What the slot records besides its stage.
  void SetAttempt(size_t i, int attempt) { slots_[i].attempt = attempt; }
  int CountFailure(size_t i) { return ++slots_[i].failures; }  // the failures so far
  void SetHit(size_t i, std::optional<int64_t> hit) { slots_[i].hit = hit; }
  void SetBranchPrune(size_t i, std::string why) { slots_[i].branch_prune = std::move(why); }

  // Attempts in flight, oldest first. Start moves run `attempt.index` (kQueued) to kRunning with
  // it; EndAttempt takes the k-th out (its run stays kRunning until the executor moves it on).
  Status Start(InFlight attempt);
  std::vector<InFlight>& in_flight() { return in_flight_; }
  const std::vector<InFlight>& in_flight() const { return in_flight_; }
  InFlight EndAttempt(size_t k);

  // The held runs (branches waiting for their trunk), in index order.
  bool any_held() const { return held_ > 0; }
  std::vector<size_t> Held() const;

  // The LR search: the runs of a group, in index order, and the rounds added to it.
  const std::vector<size_t>& SearchGroupRuns(const std::string& group) const;
  int SearchRounds(const std::string& group) const;
  void AddSearchRound(const std::string& group) { ++search_rounds_[group]; }

 private:
  Status Move(size_t i, RunStage to);  // Transition, kRunning included

  std::vector<RunSlot> slots_;
  std::vector<std::string> ids_;            // run ids, indexed like slots_
  std::map<std::string, size_t> index_of_;  // run id -> index
  std::vector<InFlight> in_flight_;
  size_t held_ = 0;                                           // runs in kHeld
  std::map<std::string, std::vector<size_t>> search_groups_;  // LR search: group -> runs
  std::map<std::string, int> search_rounds_;  // LR search: refinement rounds added per group
};

// The database's record of a planned run before it ever ran (pending, no attempt).
results::RunRecord PlannedRecord(const PlannedRun& run, int64_t sweep_id);

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_EXECUTE_RUN_TABLE_H_
