// MakeCommunicator and the launcher-environment helpers (see communicator.h).
#include "runner/comm/communicator.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>

#include "runner/comm/mpi_communicator.h"
#ifdef BATCHLAB_WITH_GLOO
#include "runner/comm/gloo_communicator.h"
#endif
#include "runner/config/runner_error.h"
#ifdef BATCHLAB_WITH_NCCL
#include "runner/comm/nccl_communicator.h"
#endif

namespace batchlab::runner {
namespace {

// The value of the first of `names` that is set, parsed as an integer >= `min`; -1 if none is set.
int EnvInt(std::initializer_list<const char*> names, int min) {
  for (const char* name : names) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') continue;
    char* end = nullptr;
    errno = 0;
    const long value = std::strtol(v, &end, 10);
    if (errno != 0 || *end != '\0' || value < min || value > 1 << 24) {
      throw RunnerError(RunnerError::Kind::kComm, std::string("environment variable ") + name +
                                                      "=\"" + v + "\" is not a valid rank/size");
    }
    return static_cast<int>(value);
  }
  return -1;
}

}  // namespace

RankInfo RankInfoFromEnvironment() {
  RankInfo info;
  struct Source {
    const char* rank;
    const char* size;
    const char* local;
    const char* local_size;  // nullptr: the launcher has none
  };
  // mpirun (OpenMPI), PMI-1/2 launchers (MPICH hydra, srun --mpi=pmi2), srun.
  for (const Source& s : {Source{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                                 "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
                          Source{"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
                          Source{"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", nullptr}}) {
    const int rank = EnvInt({s.rank}, 0);
    const int size = EnvInt({s.size}, 1);
    if (rank < 0 || size < 0) continue;
    if (rank >= size) {
      throw RunnerError(RunnerError::Kind::kComm, std::string(s.rank) + "=" + std::to_string(rank) +
                                                      " is not below " + s.size + "=" +
                                                      std::to_string(size));
    }
    info.rank = rank;
    info.world_size = size;
    info.local_rank = std::max(EnvInt({s.local}, 0), 0);
    if (s.local_size != nullptr) info.local_size = std::max(EnvInt({s.local_size}, 1), 0);
    return info;
  }
  return info;
}

void Communicator::AllreduceNow(torch::Tensor& tensor, ReduceOp op,
                                std::chrono::milliseconds timeout) {
  Allreduce(tensor, op)->Wait(timeout);
}

std::unique_ptr<Work> Communicator::Send(const torch::Tensor&, int, int) {
  throw BadConfig(std::string("comm.backend: \"") + backend() +
                  "\" has no point-to-point messages, which comm.sync async_ps and backup need; "
                  "use \"mpi\"");
}

std::unique_ptr<Work> Communicator::Recv(torch::Tensor& tensor, int from, int tag) {
  return Send(tensor, from, tag);  // the same message
}

std::string BuiltBackends() {
  std::string built = "mpi";
#ifdef BATCHLAB_WITH_GLOO
  built += ", gloo";
#endif
#ifdef BATCHLAB_WITH_NCCL
  built += ", nccl";
#endif
  return built;
}

std::string DefaultRendezvous(const std::string& metrics_path) {
  std::string path = metrics_path + ".gloo-store";
  for (const char* var : {"OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE", "SLURM_JOB_ID"}) {
    if (const char* v = std::getenv(var); v != nullptr && *v != '\0') return path + "." + v;
  }
  return path;
}

std::unique_ptr<Communicator> MakeCommunicator(const CommConfig& config, const RankInfo& rank) {
  if (!(config.bucket_mb > 0)) {
    throw BadConfig("comm.bucket_mb: must be a positive number of megabytes (e.g. 25)");
  }
  if (config.timeout_seconds <= 0) {
    throw BadConfig("comm.timeout_seconds: must be a positive number of seconds (e.g. 300)");
  }
  if (rank.world_size < 1 || rank.rank < 0 || rank.rank >= rank.world_size) {
    throw RunnerError(RunnerError::Kind::kInternal,
                      "communicator: rank " + std::to_string(rank.rank) + " of " +
                          std::to_string(rank.world_size) + " is not a valid position");
  }
  if (config.backend == "mpi") return std::make_unique<MpiCommunicator>(rank);
#ifdef BATCHLAB_WITH_GLOO
  if (config.backend == "gloo") return std::make_unique<GlooCommunicator>(config, rank);
#else
  if (config.backend == "gloo") {
    throw BadConfig(
        "comm.backend: \"gloo\" is not built into this binary (configured with "
        "BATCHLAB_WITH_GLOO=OFF); use one of the built backends: " +
        BuiltBackends());
  }
#endif
#ifdef BATCHLAB_WITH_NCCL
  if (config.backend == "nccl") return std::make_unique<NcclCommunicator>(config, rank);
#else
  if (config.backend == "nccl") {
    throw BadConfig(
        "comm.backend: \"nccl\" is not built into this binary (CUDA/NCCL were not "
        "found at build time); use one of the built backends: " +
        BuiltBackends());
  }
#endif
  throw BadConfig("comm.backend: unknown backend \"" + config.backend +
                  "\"; use one of the built backends: " + BuiltBackends());
}

}  // namespace batchlab::runner
