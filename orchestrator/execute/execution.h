// One call of ExecuteSweep (sweep_executor.h): the class that drives it, internal to
// orchestrator/execute. Its members are defined by concept, one file each:
//
//   sweep_executor.cc      the loop: start what can start, watch what runs (DecideLive), finish
//                          what ended, until nothing is left or a stop request; the outcome
//   execution_resume.cc    the sweep opened (or resumed) in the database, and each run taken up
//                          where the database left it
//   execution_attempts.cc  an attempt's life: its folder and files, its launch, its ingest and
//                          its end (DecideAttempt's verdict, retries by MayRetry/RetryDelay)
//   execution_pruning.cc   runs that can no longer change the answer (pruning.h, the branch
//                          study's exact pruning, the stall rule): stopped or never started
//   execution_plan.cc      the plan as it grows and moves: queue order, held branches released,
//                          the LR search's rounds
//
// The books live in the RunTable (run_table.h) and the PruneBook (pruning.h), indexed like the
// plan; the timing policies are pure functions (attempt_policies.h, attempt_verdict.h).
#ifndef BATCHLAB_ORCHESTRATOR_EXECUTE_EXECUTION_H_
#define BATCHLAB_ORCHESTRATOR_EXECUTE_EXECUTION_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "orchestrator/execute/run_table.h"
#include "orchestrator/execute/sweep_executor.h"
#include "orchestrator/launch/launcher.h"
#include "orchestrator/plan/gpu_slots.h"
#include "orchestrator/plan/pruning.h"
#include "orchestrator/plan/scheduler.h"
#include "orchestrator/spec/expansion.h"
#include "orchestrator/spec/spec.h"
#include "results/store.h"

namespace batchlab::orchestrator::execution {

// Opens the sweep `spec` names in the store: its latest version when the spec is the same (or
// extends it: more seeds or axis values, `*extended` says how), a new version when `new_version`
// (or none yet: `*created`), else an error naming the change (execution_resume.cc).
StatusOr<results::SweepRecord> OpenSweep(results::Store& store, const Spec& spec, bool new_version,
                                         bool* created, std::string* extended);

// The target of a resolved config as the results store reads it (nullopt: none).
struct RunTarget {
  std::string metric, op;
  double value = 0;
};
std::optional<RunTarget> TargetOf(const nlohmann::json& config);

class Execution {
 public:
  Execution(const Spec& spec, const Plan& plan, results::Store& store, Launcher& launcher,
            const ExecutorOptions& options);
  StatusOr<SweepOutcome> Run();

 private:
  // sweep_executor.cc: the loop.
  Status Prepare();
  Status Loop();
  void Escalate(InFlight& a, double now);
  void Event(const std::string& line);
  void ReportProgress(double now);

  // execution_resume.cc
  Status AddRuns(const std::vector<size_t>& added);
  Status TakeUp(size_t i, const results::RunRecord* rec);
  Status TakeUpEarlierVersions(size_t i);

  // execution_attempts.cc
  Status Launch(size_t i);
  Status WriteResumeFile(const std::string& run_id, int attempt, const std::string& dir);
  StatusOr<std::vector<std::string>> TrunkDirs(const std::string& trunk_id);
  Status WriteBranchFromFile(const PlannedRun& r, const std::string& dir);
  Status DescribeRanks(const PlannedRun& r, LaunchRequest* req);
  StatusOr<std::string> NewFolder(const std::string& base);
  Status Ingest(InFlight& a, results::IngestPass pass);
  Status Finish(InFlight a, const JobStatus& st, bool stopping);
  Status AfterFailure(size_t i, results::RunState state, const std::string& message,
                      bool retryable);

  // execution_pruning.cc
  enum class Phase { kFinished, kRunning, kWaiting };
  Status UpdatePrune(size_t i, Phase phase);
  std::optional<std::string> WhyPrune(size_t i) const;
  Status UpdateBranchPrune();
  Status PruneRunning(double now);
  Status StallIfHopeless(InFlight& a, double now);
  void ShareStopStep(InFlight& a);
  Status PruneWaiting(size_t i, const std::string& why);

  // execution_plan.cc
  Status Enqueue(size_t i, double not_before);
  int Priority(size_t i) const;
  Status ReleaseBranches(double now);
  void Track(size_t i);
  std::string SearchGroup(const PlannedRun& r) const;
  Status AdvanceSearch(size_t i);

  const Spec& spec_;
  Plan plan_;  // grows as the LR search adds rounds
  results::Store& store_;
  Launcher& launcher_;
  const ExecutorOptions& options_;
  const std::string runs_dir_;  // absolute
  LptQueue queue_;
  GpuAllocator gpu_pool_;  // options_.gpus device ids (none when GPUs are not counted)
  RunTable table_;         // each run's stage, attempt in flight, held/pruned/search state,
                           // indexed like plan_.runs (run_table.h)
  PruneBook prune_;        // indexed like plan_.runs
  double last_branch_check_ = -1e18;
  SweepOutcome out_;
  std::function<double()> now_;
  std::function<void(double)> sleep_;
  double first_start_ = 0, last_end_ = 0, longest_ = 0, run_seconds_sum_ = 0;
  int runs_timed_ = 0;
};

}  // namespace batchlab::orchestrator::execution

#endif  // BATCHLAB_ORCHESTRATOR_EXECUTE_EXECUTION_H_
