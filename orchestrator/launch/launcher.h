// The seam between the sweep executor and the outside world that runs jobs: a local pool of
// `mpirun` processes (local_launcher.h) or a Slurm cluster (slurm_launcher.h). Abstract so the
// executor can be tested with a fake and so backends can be swapped.
//
//   std::unique_ptr<Launcher> launcher = MakeLocalLauncher(settings);
//   BATCHLAB_ASSIGN_OR_RETURN(auto job, launcher->Start(request));
//   while (!job->Poll().done) Sleep();
//   job->Terminate();   // SIGTERM / scancel; Poll() then reports the end
//
// A launcher writes `launch.json` into the attempt directory (pid / job id) so that a later
// orchestrator can stop what an earlier, killed one left running (CleanUpStale).
#ifndef BATCHLAB_ORCHESTRATOR_LAUNCH_LAUNCHER_H_
#define BATCHLAB_ORCHESTRATOR_LAUNCH_LAUNCHER_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "orchestrator/spec/program.h"

namespace batchlab::orchestrator {

struct LaunchRequest {
  std::string run_id;
  int attempt = 1;
  std::string attempt_dir;  // <runs-dir>/<sweep>/<run-id>/attempt-<n>/, exists and is empty
  std::string config_path;  // attempt_dir/config.json, already written
  int nodes = 1;
  int ranks_per_node = 1;
  int world_size = 1;
  int slots = 1;  // cores the run occupies (world_size x slots per rank)
  int cpus_per_rank = 1;
  int gpus_per_rank = 0;  // resources.gpus_per_rank (Slurm: --gpus-per-task)
  // The pool's GPUs this run holds (gpu_slots.h; world_size x gpus_per_rank of them, empty when
  // none or not counted): the local launcher sets CUDA_VISIBLE_DEVICES to them.
  std::vector<int> gpu_ids;
  double timeout_seconds = 0;  // 0: none (Slurm: the spec's time limit applies)
  // What each rank runs (program.h): mpirun (or srun under Slurm) starts `rank_command` on every
  // rank; a torchrun-style launch starts `spawn_command` once locally (it starts the ranks) or
  // `rank_command` through srun under Slurm.
  LaunchMode launch = LaunchMode::kMpirun;
  std::vector<std::string> rank_command;
  std::vector<std::string> spawn_command;
  std::string workdir;                     // where the ranks run; "" = attempt_dir
  std::map<std::string, std::string> env;  // set for every rank (mpirun forwards it with -x)
};

struct JobStatus {
  bool done = false;
  std::optional<int> exit_code;  // set when the job ended with an exit code
  std::optional<int> signal;     // set when it was killed by a signal
  std::string host;              // where it ran, when known
  std::string detail;            // backend state text (e.g. Slurm "PENDING", "FAILED")
  bool unrunnable = false;       // the backend can never run it (e.g. more nodes than exist)
};

class Job {
 public:
  virtual ~Job() = default;
  virtual JobStatus Poll() = 0;  // non-blocking
  virtual void Terminate() = 0;  // ask to stop (SIGTERM to every process of the job / scancel)
  virtual void Kill() = 0;       // stop now (SIGKILL to every process / scancel --signal=KILL)
};

class Launcher {
 public:
  virtual ~Launcher() = default;
  virtual const char* name() const = 0;  // "local", "slurm"
  virtual StatusOr<std::unique_ptr<Job>> Start(const LaunchRequest& request) = 0;
  // Stops whatever an earlier orchestrator started for the attempt in `attempt_dir` and left
  // behind (reads launch.json; no-op if absent or already gone).
  virtual void CleanUpStale(const std::string& attempt_dir) = 0;
};

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_LAUNCH_LAUNCHER_H_
