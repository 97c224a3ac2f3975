#include "orchestrator/launch/rank_environment.h"

#include <cstdlib>
#include <string>

#include "base/run_protocol.h"

namespace batchlab::orchestrator {
namespace {

// A non-negative integer variable (leading digits only: Slurm writes "2(x3)"), or -1.
int IntVar(const EnvLookup& env, const char* name) {
  const char* v = env(name);
  if (v == nullptr || *v < '0' || *v > '9') return -1;
  char* end = nullptr;
  long n = std::strtol(v, &end, 10);
  if (n < 0 || n > 1'000'000) return -1;
  return static_cast<int>(n);
}

bool Complete(const RankPlace& p) {
  return p.rank >= 0 && p.world_size > 0 && p.rank < p.world_size && p.local_rank >= 0 &&
         p.local_world_size > 0 && p.local_rank < p.local_world_size;
}

}  // namespace

std::optional<RankPlace> RankPlaceFromLauncher(const EnvLookup& env) {
  RankPlace p;
  // Open MPI (mpirun, or direct launch under Slurm with PMIx).
  p.rank = IntVar(env, "OMPI_COMM_WORLD_RANK");
  if (p.rank < 0) p.rank = IntVar(env, "PMIX_RANK");
  p.world_size = IntVar(env, "OMPI_COMM_WORLD_SIZE");
  p.local_rank = IntVar(env, "OMPI_COMM_WORLD_LOCAL_RANK");
  p.local_world_size = IntVar(env, "OMPI_COMM_WORLD_LOCAL_SIZE");
  if (Complete(p)) return p;
  // Slurm (srun).
  p.rank = IntVar(env, "SLURM_PROCID");
  p.world_size = IntVar(env, "SLURM_NTASKS");
  p.local_rank = IntVar(env, "SLURM_LOCALID");
  p.local_world_size = IntVar(env, "SLURM_STEP_TASKS_PER_NODE");
  if (p.local_world_size < 0) p.local_world_size = IntVar(env, "SLURM_TASKS_PER_NODE");
  if (p.local_world_size < 0) p.local_world_size = IntVar(env, "SLURM_NTASKS_PER_NODE");
  if (Complete(p)) return p;
  // Already in torch's terms (e.g. started by torchrun itself).
  p.rank = IntVar(env, "RANK");
  p.world_size = IntVar(env, "WORLD_SIZE");
  p.local_rank = IntVar(env, "LOCAL_RANK");
  p.local_world_size = IntVar(env, "LOCAL_WORLD_SIZE");
  if (Complete(p)) return p;
  return std::nullopt;
}

std::map<std::string, std::string> TorchEnvironment(const RankPlace& place, const EnvLookup& env) {
  std::map<std::string, std::string> out = {
      {"RANK", std::to_string(place.rank)},
      {"WORLD_SIZE", std::to_string(place.world_size)},
      {"LOCAL_RANK", std::to_string(place.local_rank)},
      {"LOCAL_WORLD_SIZE", std::to_string(place.local_world_size)},
  };
  const char* addr = env("MASTER_ADDR");
  const char* port = env("MASTER_PORT");
  if (addr == nullptr || *addr == '\0') out["MASTER_ADDR"] = "127.0.0.1";
  if (port == nullptr || *port == '\0') out["MASTER_PORT"] = "29500";
  return out;
}

int JobExitCode(const std::map<int, int>& rank_exit_codes) {
  for (const auto& [rank, code] : rank_exit_codes) {
    if (!protocol::IsFinalExitCode(code)) return code;
  }
  auto zero = rank_exit_codes.find(0);
  return zero == rank_exit_codes.end() ? 1 : zero->second;
}

}  // namespace batchlab::orchestrator
