// Local backend: each run is one `mpirun -np K ... <rank command>` (the request's: batchlab-runner
// --config FILE, or batchlab-rank -- <user program>), or for a torchrun-style user program one
// `batchlab-rank --spawn K -- ...`, started with Boost.Process from an argument vector (never a
// shell string), in a session of its own, with stdout/stderr in the attempt directory and
// BATCHLAB_ATTEMPT_DIR tagging every process of it. The child gets SIGTERM if the orchestrator
// dies (PR_SET_PDEATHSIG); Terminate() and Kill() signal every process of the job
// (job_processes.h: each Open MPI 4.1 rank has a process group of its own), and what is left when
// mpirun ends is killed, so no rank is ever left behind.
//
// Launch settings (docs/spec.md "Launch settings"): OMPI_MCA_btl=self,vader and
// OMPI_MCA_pml=ob1 by default (shared-memory transport: ~0.13 s start-up instead of ~0.33 s on
// the reference machine); a variable already set in the environment wins over the default, and
// the spec's `launch.env` wins over both. Ranks pinned to cores only when the cores are the
// run's own (BindingArguments below; concurrent jobs must not all pin to core 0),
// `--allow-run-as-root` when running as root, `--oversubscribe` only when the run needs more ranks
// than the pool's slots or the machine's cores. A run holding GPUs (LaunchRequest::gpu_ids) gets
// CUDA_VISIBLE_DEVICES set to them (RequestEnvironment below).
//
//   LocalLaunchSettings s{.pool_slots = 2};
//   auto launcher = MakeLocalLauncher(s);
#ifndef BATCHLAB_ORCHESTRATOR_LAUNCH_LOCAL_LAUNCHER_H_
#define BATCHLAB_ORCHESTRATOR_LAUNCH_LOCAL_LAUNCHER_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "orchestrator/launch/launcher.h"

namespace batchlab::orchestrator {

struct LocalLaunchSettings {
  std::string mpirun = "mpirun";  // looked up in PATH unless it contains a '/'
  int pool_slots = 1;
  std::map<std::string, std::string> env;  // the spec's launch.env
  std::vector<std::string> mpirun_args;    // the spec's launch.mpirun_args
};

// How mpirun places the ranks (docs/spec.md, "Placement"): `--bind-to core` (with
// `--map-by slot:PE=N` for N cpus per rank) when the cores are the run's own, `--bind-to none`
// when they are shared; nothing when the spec's mpirun_args bind the ranks themselves.
std::vector<std::string> BindingArguments(bool own_cores, int cpus_per_rank,
                                          const std::vector<std::string>& user_args);

// The argument vector after "mpirun" for a request (exposed for tests).
std::vector<std::string> MpirunArguments(const LocalLaunchSettings& settings,
                                         const LaunchRequest& request, bool as_root,
                                         int hardware_cores);

// Variables the launcher sets in the child's environment on top of `current` (the
// orchestrator's own): the defaults not already set there, then the spec's launch.env.
std::map<std::string, std::string> LaunchEnvironmentOverrides(
    const std::map<std::string, std::string>& spec_env,
    const std::map<std::string, std::string>& current);

// The variables a request sets for every rank (mpirun forwards each with -x): its `env`, and
// CUDA_VISIBLE_DEVICES = the GPUs it holds (gpu_ids, named through the orchestrator's own
// CUDA_VISIBLE_DEVICES in `current` when that is set, gpu_slots.h) when it holds any. With the
// run's devices visible in order, each rank's CUDA device is its local rank.
std::map<std::string, std::string> RequestEnvironment(
    const LaunchRequest& request, const std::map<std::string, std::string>& current);

std::unique_ptr<Launcher> MakeLocalLauncher(LocalLaunchSettings settings);

// This machine's host name.
std::string HostName();

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_LAUNCH_LOCAL_LAUNCHER_H_
