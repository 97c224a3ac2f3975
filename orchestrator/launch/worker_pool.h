// Warm workers for the built-in runner: a Launcher in front of another (local or Slurm) that keeps
// the ranks of a finished run alive (`batchlab-runner --worker DIR`, runner/train/worker_loop.h)
// and hands them the next run of the same shape (world size, nodes, ranks per node, slots,
// environment, GPUs) instead of starting mpirun, LibTorch and the data again; under Slurm a worker
// is an sbatch job, so runs share its allocation (job packing). Every run keeps its own attempt
// folder, logs and outcome; Terminate()/Kill() of a run stop its whole worker, and a worker whose
// run failed, was stopped or died is never reused. Other launches (user programs, torchrun) go to
// the inner launcher untouched.
//
// The file protocol between pool and worker: docs/protocol.md, "Warm workers"; what the user sees
// and the rules for reuse (time limit, idle workers, failures, GPUs): docs/spec.md, "Warm workers
// (built-in runner)" and "Slurm backend", "Job packing".
//
//   WorkerPoolSettings pool;
//   pool.runner = tools.runner;
//   pool.max_workers = 2;
//   auto launcher = MakeWorkerPool(MakeLocalLauncher(s), std::move(pool));
#ifndef BATCHLAB_ORCHESTRATOR_LAUNCH_WORKER_POOL_H_
#define BATCHLAB_ORCHESTRATOR_LAUNCH_WORKER_POOL_H_

#include <functional>
#include <memory>
#include <string>

#include "orchestrator/launch/launcher.h"

namespace batchlab::orchestrator {

struct WorkerPoolSettings {
  std::string runner;   // the built-in runner: requests running `<runner> --config X` are pooled
  int max_workers = 1;  // workers alive at once (the pool's slots)
  // The folder in which the pool makes its own (batchlab-workers-XXXXXX, removed when the pool
  // ends); "" = $TMPDIR. Under Slurm it must be one the compute nodes see.
  std::string dir;
  // A worker's allocation ends this long after it starts (Slurm: slurm.time_limit_minutes x 60);
  // 0 = never (local). A run joins a worker only if the worker's age (from its submission) plus
  // the run's timeout (without one, the whole allocation) fits.
  double allocation_seconds = 0;
  // An idle worker given no run for this long is retired; 0 = kept until its room is needed.
  double idle_seconds = 0;
  // Idle workers hold resources the scheduler counts as free (Slurm: an allocation's nodes), so
  // all are retired before a new worker is started (else its job could wait for theirs).
  bool idle_workers_hold_nodes = false;
  // Seconds on a monotonic clock; empty = std::chrono::steady_clock (tests pass a fake).
  std::function<double()> clock;
};

std::unique_ptr<Launcher> MakeWorkerPool(std::unique_ptr<Launcher> inner,
                                         WorkerPoolSettings settings);

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_LAUNCH_WORKER_POOL_H_
