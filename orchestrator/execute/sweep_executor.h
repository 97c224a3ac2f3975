// Runs a planned sweep to the end: opens (or resumes) the sweep in the results store, skips runs
// that already finished, launches the rest longest-first on the slot pool through a Launcher,
// moves every run through pending -> running -> (completed | target_reached | diverged |
// budget_exhausted | failed | timed_out | cancelled), ingests metrics while runs go and once
// more at their end, retries failures with exponential backoff, enforces per-attempt timeouts,
// and on a stop request (SIGINT/SIGTERM) terminates the children and marks their runs cancelled.
//
// Attempt folders are never deleted or overwritten: attempt n of a run goes to
// <runs_dir>/<sweep>/<run-id>/attempt-<n>-<database id>/ (a suffix -2, -3, ... if that name is
// taken, e.g. by a crash before the attempt was recorded), and the folder is recorded in the
// database (Store::StartAttempt). The outcome of a run's `end` line wins over whatever happens
// after it (a hang, a crash, a timeout); a run that has written its `end` line and does not exit
// is stopped after the grace period.
//
// Resume: running the same spec again continues the sweep. A run left `running` by a killed
// orchestrator is stopped (Launcher::CleanUpStale on the folder recorded in the database, whatever
// --runs-dir is now), the rest of its metrics file is ingested, and it is marked cancelled
// ("interrupted") and run again as a new attempt — unless that tail holds its `end` line, whose
// outcome is then kept. Metrics are stored per (run, attempt). A changed spec under the same name
// is refused unless `new_version` is set.
//
//   BATCHLAB_ASSIGN_OR_RETURN(auto store, results::Store::Open(db_path));
//   auto launcher = MakeLocalLauncher(settings);
//   ExecutorOptions opts{.slots = 2, .runs_dir = "runs"};
//   BATCHLAB_ASSIGN_OR_RETURN(SweepOutcome out, ExecuteSweep(spec, plan, *store, *launcher, opts));
#ifndef BATCHLAB_ORCHESTRATOR_EXECUTE_SWEEP_EXECUTOR_H_
#define BATCHLAB_ORCHESTRATOR_EXECUTE_SWEEP_EXECUTOR_H_

#include <functional>
#include <string>

#include "base/status.h"
#include "orchestrator/spec/expansion.h"
#include "orchestrator/launch/launcher.h"
#include "orchestrator/execute/progress.h"
#include "orchestrator/spec/spec.h"
#include "results/store.h"

namespace batchlab::orchestrator {

// The executor's time: a monotonic clock in seconds and a sleep. Tests pass a fake that advances
// a counter, so retries, backoff and timeouts run without real waiting.
struct ExecutorClock {
  std::function<double()> now;        // default: steady_clock seconds
  std::function<void(double)> sleep;  // default: std::this_thread::sleep_for
};

struct ExecutorOptions {
  int slots = 1;  // cores in the pool
  // GPUs in the pool (gpu_slots.h): a run holding world_size x gpus_per_rank of them starts only
  // when they are free, gets their ids (LaunchRequest::gpu_ids) and gives them back when it ends;
  // a plan with a run needing more is refused. -1: not counted (Slurm allocates them).
  int gpus = 0;
  std::string runs_dir = "runs";    // attempt directories go under <runs_dir>/<sweep>/
  bool new_version = false;         // a changed spec becomes a new version instead of an error
  double poll_seconds = 0.01;       // how often children are polled
  double ingest_every_seconds = 1;  // live ingest period of a running run's metrics
  // ... of a run that another configuration at its batch size already sets a bar for (pruning
  // can stop it): a run is pruned at most this long after it passes the bar.
  double prune_ingest_every_seconds = 0.1;
  double terminate_grace_seconds = 10;   // SIGTERM -> SIGKILL on cancel and timeout
  std::function<bool()> stop_requested;  // polled; true stops the sweep (SIGINT/SIGTERM)
  ProgressPrinter* progress = nullptr;   // optional
  ExecutorClock clock;                   // empty members: the real clock
  LaunchTools tools;                     // batchlab-runner and batchlab-rank (program.h)
};

struct SweepOutcome {
  int64_t sweep_id = 0;
  int version = 0;
  bool new_sweep = false;          // this call created the sweep (version)
  std::string extended;            // non-empty: the spec extended the version ("adds seeds [2]")
  int total = 0;                   // runs in the plan
  int skipped = 0;                 // already finished before this call
  // Runs of an earlier version of the sweep (the same config: the same run) that have not
  // finished there: not run by this version (docs/spec.md, "Run identity and spec versions").
  int earlier_unfinished = 0;
  int succeeded = 0;               // completed, target_reached, budget_exhausted, diverged now
  int failed = 0;                  // failed or timed out after all retries
  int cancelled = 0;               // stopped by a stop request
  int stalled = 0;                 // stopped by the stall rule (spec.h Spec::stall)
  int pruned = 0;                  // stopped early or never started: could not change the answer
  int preempted = 0;  // attempts that checkpointed on a signal and went on in a new attempt
  int search_rounds = 0;           // LR search: rounds added (over all batch sizes) by this call
  int interrupted = 0;             // found running from a killed orchestrator and re-queued
  int attempts = 0;                // attempts started by this call
  bool stopped = false;            // a stop request ended the sweep early
  double wall_seconds = 0;         // from first launch to last end
  double lower_bound_seconds = 0;  // max(longest attempt, slot-seconds / slots, GPU-seconds /
                                   // GPUs when GPUs are counted), observed
  double busy_slot_seconds = 0;    // sum over attempts of slots x duration
  double busy_gpu_seconds = 0;     // sum over attempts of GPUs held x duration
};

StatusOr<SweepOutcome> ExecuteSweep(const Spec& spec, const Plan& plan, results::Store& store,
                                    Launcher& launcher, const ExecutorOptions& options);

// What an attempt's exit code and end line make of its run: attempt_verdict.h (DecideAttempt).

// Where an attempt keeps its config, metrics and logs: protocol::AttemptDir (base/run_protocol.h).

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_EXECUTE_SWEEP_EXECUTOR_H_
