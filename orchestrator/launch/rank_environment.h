// Where one rank of a user program sits in its job, read from the launcher that started it, and
// the variables torch.distributed's env:// rendezvous expects. Used by `batchlab-rank`
// (rank_main.cc), the wrapper every rank of a user program runs through:
//
//   mpirun -np 2 batchlab-rank -- python3 train.py --config F   # maps OMPI_COMM_WORLD_* -> RANK...
//   srun batchlab-rank -- python3 train.py --config F           # maps SLURM_PROCID ...   ->
//   RANK... batchlab-rank --spawn 2 -- python3 train.py --config F      # starts 2 ranks itself
//   (torchrun)
//
//   std::optional<RankPlace> p = RankPlaceFromLauncher(getenv);
//   for (const auto& [k, v] : TorchEnvironment(*p)) setenv(k.c_str(), v.c_str(), 1);
#ifndef BATCHLAB_ORCHESTRATOR_LAUNCH_RANK_ENVIRONMENT_H_
#define BATCHLAB_ORCHESTRATOR_LAUNCH_RANK_ENVIRONMENT_H_

#include <functional>
#include <map>
#include <optional>
#include <string>

namespace batchlab::orchestrator {

struct RankPlace {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
};

// Looks up a variable: nullptr when unset (std::getenv fits).
using EnvLookup = std::function<const char*(const char*)>;

// The rank's place from Open MPI (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE), PMIx
// (PMIX_RANK with OMPI sizes), Slurm (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID,
// SLURM_STEP_TASKS_PER_NODE / SLURM_TASKS_PER_NODE) or an already set torch environment (RANK,
// WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE), in that order; nullopt if none is complete.
std::optional<RankPlace> RankPlaceFromLauncher(const EnvLookup& env);

// RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, and MASTER_ADDR / MASTER_PORT when `env` has
// none (127.0.0.1, 29500: torch's defaults; the orchestrator always sets a free port per run).
std::map<std::string, std::string> TorchEnvironment(const RankPlace& place, const EnvLookup& env);

// The exit code of a whole job from its ranks' codes: the lowest rank's code that is not a final
// outcome (protocol::IsFinalExitCode: a failure, 128+signal, or 7 = preempted), else rank 0's.
int JobExitCode(const std::map<int, int>& rank_exit_codes);

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_LAUNCH_RANK_ENVIRONMENT_H_
