// A warm worker: one rank that stays alive across consecutive runs of the same world size,
// keeping LibTorch and the data loaded, and takes its next run from the orchestrator through
// files in a folder of its own (orchestrator/launch/worker_pool.h is the other side):
//
//   DIR/ready.rank<r>     this rank is up and speaks the protocol (written once, at start)
//   DIR/job-<n>.json      run n: {"config": "<attempt dir>/config.json"}; written atomically
//   DIR/done-<n>.rank<r>  this rank's exit code for run n (docs/protocol.md); written atomically
//   DIR/quit              the orchestrator is done with the worker: every rank exits 0
//
// For run n every rank changes into the config's folder, appends its stdout and stderr to the
// attempt's stdout.log / stderr.log (as a cold run's mpirun does) and runs the config exactly as
// `batchlab-runner --config` would. After an exit code other than the protocol's outcomes
// (0, 3, 4, 5, 6) the worker exits with it: a rank that failed is never reused.
//
//   int code = RunWorkerLoop(dir, rank, [&](const std::string& config) { return RunOne(config); });
#ifndef BATCHLAB_RUNNER_TRAIN_WORKER_LOOP_H_
#define BATCHLAB_RUNNER_TRAIN_WORKER_LOOP_H_

#include <chrono>
#include <functional>
#include <string>

namespace batchlab::runner {

struct WorkerLoopOptions {
  std::chrono::milliseconds poll{2};  // how often the folder is checked for the next job
};

// Runs jobs until DIR/quit appears (returns 0) or a run ends in failure (returns its code).
// `run_config` runs one config file and returns its exit code; it must not throw.
int RunWorkerLoop(const std::string& dir, int rank,
                  const std::function<int(const std::string& config_path)>& run_config,
                  const WorkerLoopOptions& options = {});

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_TRAIN_WORKER_LOOP_H_
