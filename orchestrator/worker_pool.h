// Warm workers for the built-in runner: a Launcher in front of the local one that keeps the ranks
// of finished runs alive (`batchlab-runner --worker DIR`, runner/worker_loop.h) and hands them
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
// Other launches (user programs, torchrun) go to the inner launcher untouched. At most
// `max_workers` workers live at once (idle ones of another shape are retired to make room); the
// pool's destructor asks every worker to quit and stops what is left.
//
//   auto launcher = MakeWorkerPool(MakeLocalLauncher(s), {.runner = tools.runner, .max_workers =
//   2});
#ifndef BATCHLAB_ORCHESTRATOR_WORKER_POOL_H_
#define BATCHLAB_ORCHESTRATOR_WORKER_POOL_H_

#include <memory>
#include <string>

#include "orchestrator/launcher.h"

namespace batchlab::orchestrator {

struct WorkerPoolSettings {
  std::string runner;   // the built-in runner: requests running `<runner> --config X` are pooled
  int max_workers = 1;  // workers alive at once (the pool's slots)
  std::string dir;      // where the workers' folders go; "" = a new folder under $TMPDIR
};

std::unique_ptr<Launcher> MakeWorkerPool(std::unique_ptr<Launcher> inner,
                                         WorkerPoolSettings settings);

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_WORKER_POOL_H_
