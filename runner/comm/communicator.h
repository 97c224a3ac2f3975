// The narrow collective interface a data-parallel step needs (c10d-style): allreduce, broadcast,
// barrier, each returning a handle to wait on with a timeout. Backends: mpi (OpenMPI),
// gloo (c10d ProcessGroupGloo over a FileStore/TCPStore), nccl (CUDA builds only).
//
//   std::unique_ptr<Communicator> comm = MakeCommunicator(config.comm, rank_info);
//   comm->Broadcast(flat_params, /*root=*/0)->Wait(std::chrono::seconds(60));
//   comm->Allreduce(bucket, ReduceOp::kAvg)->Wait(timeout);   // bucket: contiguous fp32 tensor
//
// Every call is collective: all ranks call it in the same order with same-shaped tensors.
// Failures throw RunnerError (see runner_error.h) naming the backend, the call and the rank.
#ifndef BATCHLAB_RUNNER_COMM_COMMUNICATOR_H_
#define BATCHLAB_RUNNER_COMM_COMMUNICATOR_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <torch/types.h>

#include "base/config_fields.h"
#include "base/sync_mode.h"

namespace batchlab::runner {

enum class ReduceOp { kSum, kAvg };

// A pending collective. Wait returns when the collective has completed on this rank, or throws
// RunnerError if `timeout` passes first.
class Work {
 public:
  virtual ~Work() = default;
  virtual void Wait(std::chrono::milliseconds timeout) = 0;
  // True once the operation has completed (then Wait returns at once); never blocks.
  virtual bool Test() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual const char* backend() const = 0;  // "mpi", "gloo", "nccl"

  // In place on a contiguous tensor; after Wait every rank holds the same values.
  virtual std::unique_ptr<Work> Allreduce(torch::Tensor& tensor, ReduceOp op) = 0;
  virtual std::unique_ptr<Work> Broadcast(torch::Tensor& tensor, int root) = 0;
  virtual std::unique_ptr<Work> Barrier() = 0;
  // Allreduce and wait for it (the gradient buckets' path). By default Allreduce(...)->Wait; mpi
  // runs a blocking MPI_Allreduce under a watchdog instead, which ends the process (exit 1, the
  // reason on stderr) if the call outlives `timeout`: Open MPI's blocking collectives use faster
  // algorithms than its non-blocking ones and need no polling to progress.
  virtual void AllreduceNow(torch::Tensor& tensor, ReduceOp op, std::chrono::milliseconds timeout);

  // Point to point, for the parameter-server modes (comm.sync async_ps, backup): messages from
  // one rank to another with the same tag arrive in order. Only the mpi backend has them; the
  // others throw RunnerError (bad config) naming comm.backend.
  virtual std::unique_ptr<Work> Send(const torch::Tensor& tensor, int to, int tag);
  virtual std::unique_ptr<Work> Recv(torch::Tensor& tensor, int from, int tag);

  // Call on a rank that is about to exit because of an error, so that its peers fail fast
  // instead of waiting out their collective timeouts. mpi: the process will exit without
  // MPI_Finalize (which would wait for the peers), so mpirun stops the whole job at once; gloo,
  // nccl: nothing to do, peers see the closed connections.
  virtual void Abandon() {}
};

// Where this process sits in the job, read from the launcher's environment
// (OMPI_COMM_WORLD_RANK/SIZE under mpirun, PMI/SLURM variables under srun; 0/1 when alone).
struct RankInfo {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_size = 0;  // ranks on this node; 0 when the launcher does not say (srun)
};

// Config "comm" (meanings, ranges and defaults: base/config_fields.cc, the one declaration).
struct CommConfig {
  std::string backend = config::Default<std::string>("comm.backend");  // mpi | gloo | nccl
  double bucket_mb = config::Default<double>("comm.bucket_mb");  // gradient fusion bucket size
  // gloo: FileStore path, or host:port for a TCPStore served by rank 0 ("" = a file in $TMPDIR
  // named after the launcher's job id: single node only; set DefaultRendezvous(metrics_path))
  std::string rendezvous = config::Default<std::string>("comm.rendezvous");
  int timeout_seconds = config::Default<int>("comm.timeout_seconds");
  // How ranks combine their work (base/sync_mode.h's table), parsed once with the config.
  SyncMode sync = FindSyncMode(config::Default<std::string>("comm.sync"))->mode;
  int64_t sync_every = config::Default<int64_t>("comm.sync_every");          // local_sgd: H
  int64_t backup_workers = config::Default<int64_t>("comm.backup_workers");  // backup: b
  struct Straggler {
    int64_t rank = kRandomRank;  // the slow rank, or kRandomRank: one drawn per step
    double delay_ms = 0;
    double probability = config::Default<double>("comm.straggler.probability");
    static constexpr int64_t kRandomRank = -1;  // "random" in the config
  };
  std::optional<Straggler> straggler;  // null: no emulated straggler
};

// Builds the named backend; throws RunnerError (bad config) for an unknown or not-built backend.
std::unique_ptr<Communicator> MakeCommunicator(const CommConfig& config, const RankInfo& rank);

// Reads RankInfo from the launcher's environment: OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK}
// (mpirun), then PMI_{RANK,SIZE} / PMIX_RANK, then SLURM_{PROCID,NTASKS,LOCALID} (srun); 0/1/0
// when none is set. Throws RunnerError (kComm) for values that are not numbers or out of range.
RankInfo RankInfoFromEnvironment();

// The backends compiled into this binary, e.g. "mpi, gloo" (nccl only on CUDA builds).
std::string BuiltBackends();

// The gloo FileStore path for a run whose rank 0 writes `metrics_path`: a file next to it,
// suffixed with the launcher's job id when one is set (so a relaunch never reads a stale store).
// The store removes the file when every rank has closed it. Use as CommConfig::rendezvous.
std::string DefaultRendezvous(const std::string& metrics_path);

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_COMM_COMMUNICATOR_H_
