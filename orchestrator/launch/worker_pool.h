// Warm workers for the built-in runner: a Launcher in front of the local one that keeps the ranks
// of finished runs alive (`batchlab-runner --worker DIR`, runner/train/worker_loop.h) and hands them
// the next run of the same shape (world size, nodes, ranks per node, slots, environment) instead
// of starting mpirun, LibTorch and the data again. What stays the same as a cold launch:
//
// - each run still has its attempt folder, config.json, metrics.jsonl, stdout.log and stderr.log
//   (the ranks append to them) and a launch.json naming the worker, so a later orchestrator's
//   CleanUpStale stops the worker that ran it;
// - Terminate()/Kill() of a run stop its whole worker (timeouts, cancel and failures end the
//   processes exactly as before); a worker whose run failed, was stopped or died is never reused,
//   and the executor retries the run as it would a cold one (a new attempt gets a new worker);
// - a runner that does not speak the protocol (its worker exits before saying `ready`) is
//   launched cold from then on, the first run included: nothing is lost, nothing is retried.
//
// A worker keeps the GPUs it started with (LaunchRequest::gpu_ids are part of its shape), and an
// idle worker on a GPU handed to a new run is retired before that run starts: a GPU is never
// used by two runs' processes at once.
//
// Under Slurm (job packing) the inner launcher's Job is the worker's sbatch job, so one allocation
// runs several runs of the same shape in sequence. What changes there:
//
// - the folders must be on the filesystem the compute nodes see (`dir` under the runs folder);
// - an allocation ends `allocation_seconds` (slurm.time_limit_minutes) after it starts, so a run
//   joins a worker only if the worker's age, counted from its submission (the allocation cannot
//   have started earlier), plus the time the run may take (resources.timeout_seconds; without
//   one, the whole allocation) fits; a worker a run does not fit is retired, and the run gets a
//   new one. Runs without a timeout therefore get an allocation each, as cold jobs do;
// - a worker may pend in the queue for long before it says `ready`: only a worker that ended by
//   itself (an exit code, not stopped by the pool or the backend) before saying `ready` marks the
//   runner as not speaking the protocol;
// - an idle worker holds nodes the executor counts as free, so every idle worker is retired
//   before a new one is submitted (`idle_workers_hold_nodes`; its job might wait for those
//   nodes), and one left without a run for `idle_seconds` is retired;
// - launch.json carries the inner launcher's record of the worker's job (Slurm: its job id), so a
//   later orchestrator's CleanUpStale scancels it.
//
// When a worker ends in the middle of a run, its own log (the launcher's or Slurm's messages, e.g.
// a time limit) is appended to the attempt's stderr.log, since the worker's folder is removed when
// the pool ends.
//
// Other launches (user programs, torchrun) go to the inner launcher untouched. At most
// `max_workers` workers live at once (idle ones of another shape are retired to make room); the
// pool's destructor asks every worker to quit and stops what is left.
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
  // 0 = never (local). See the header comment for the rule.
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
