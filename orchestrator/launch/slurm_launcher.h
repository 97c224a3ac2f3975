// Slurm backend: each attempt is one `sbatch` job (nodes, tasks per node, CPUs per task and time
// limit from the run and the spec's `slurm` section; `--gpus-per-task=g` for
// resources.gpus_per_rank g > 0 unless slurm.sbatch_args ask for GPUs themselves) whose batch
// script runs `mpirun <rank command>` inside the allocation (`srun <rank command>` for a
// torchrun-style user program). The script is fixed: it exports MASTER_ADDR (the allocation's first
// node) and then `exec "$@"`: the command line is passed to sbatch as arguments, never as shell
// text. States and exit codes are read back from Slurm (`scontrol show job`, then `sacct` once the
// controller has forgotten the job), not assumed from submission; Terminate/Kill map to
// `scancel`; the job id goes to launch.json so a resumed sweep can scancel what a killed
// orchestrator left queued or running. Open MPI's transports default to shared memory
// (`OMPI_MCA_btl=self,vader`), plus TCP between nodes for a multi-node job, unless the
// environment or launch.env names them (docs/cluster.md). Before a sweep submits anything,
// slurm_preflight.h checks that every run fits the partition. With slurm.elastic a job still
// pending after slurm.elastic.pending_seconds while its partition has fewer idle nodes than it
// asks for is lowered to them (`scontrol update NumNodes= NumTasks=`, at least min_nodes), and
// the batch script starts ranks_per_node ranks on each node the job got (slurm_elastic.h).
//
//   BATCHLAB_ASSIGN_OR_RETURN(auto launcher, MakeSlurmLauncher(settings));
//   BATCHLAB_ASSIGN_OR_RETURN(auto job, launcher->Start(request));   // sbatch --parsable ...
#ifndef BATCHLAB_ORCHESTRATOR_LAUNCH_SLURM_LAUNCHER_H_
#define BATCHLAB_ORCHESTRATOR_LAUNCH_SLURM_LAUNCHER_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "orchestrator/launch/launcher.h"
#include "orchestrator/spec/spec.h"

namespace batchlab::orchestrator {

struct SlurmLaunchSettings {
  std::map<std::string, std::string> env;  // the spec's launch.env (exported to the job)
  std::vector<std::string> mpirun_args;
  SlurmSettings slurm;
  double poll_interval_seconds = 0.5;  // per job: how often Slurm is asked
};

// The sbatch argument vector for a request (exposed for tests); `script` is the batch script.
std::vector<std::string> SbatchArguments(const SlurmLaunchSettings& settings,
                                         const LaunchRequest& request, const std::string& script,
                                         bool as_root);

// Parses `scontrol show job -o` output: JobState, ExitCode ("code:signal"), NodeList.
struct SlurmJobInfo {
  std::string state;  // e.g. PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT
  std::optional<int> exit_code;
  std::optional<int> signal;
  std::string nodes;
  std::string reason;     // why a job pends, e.g. PartitionNodeLimit
  std::string partition;  // the job's partition
};
std::optional<SlurmJobInfo> ParseScontrolJob(const std::string& text);
bool IsSlurmTerminalState(const std::string& state);

// FAILED_PRECONDITION if sbatch is not installed.
StatusOr<std::unique_ptr<Launcher>> MakeSlurmLauncher(SlurmLaunchSettings settings);

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_LAUNCH_SLURM_LAUNCHER_H_
