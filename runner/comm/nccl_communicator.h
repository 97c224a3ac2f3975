// The `nccl` communicator (CUDA builds only: compiled when runner/CMakeLists.txt finds CUDA and
// NCCL and defines BATCHLAB_WITH_NCCL). The project's own machine has no GPU: it compiles
// and links here; run on a GPU by scripts/gpu/check.sh (docs/gpu.md).
//
// One NCCL communicator per process on GPU local_rank % device_count; the ncclUniqueId is
// created by rank 0 and broadcast over MPI (so launch with mpirun / srun --mpi=pmix). CPU tensors
// are staged through a device buffer cached per host tensor (the gradient buckets reuse theirs
// every step, so there is no per-step cudaMalloc): copy in, ncclAllReduce/ncclBroadcast, copy
// out, all on one stream; Work::Wait polls a CUDA event and ncclCommGetAsyncError until done or
// the timeout passes (then the communicator is aborted). CUDA tensors are reduced in place on the
// default stream (LibTorch's), with no staging.
// Every CUDA/NCCL call goes through a check macro that throws RunnerError (kComm) naming the
// call, file:line and rank.
//
//   auto comm = std::make_unique<NcclCommunicator>(config, RankInfoFromEnvironment());
#ifndef BATCHLAB_RUNNER_COMM_NCCL_COMMUNICATOR_H_
#define BATCHLAB_RUNNER_COMM_NCCL_COMMUNICATOR_H_

#ifdef BATCHLAB_WITH_NCCL

#include <cstddef>
#include <memory>
#include <unordered_map>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "runner/comm/communicator.h"

namespace batchlab::runner {

class NcclCommunicator : public Communicator {
 public:
  NcclCommunicator(const CommConfig& config, const RankInfo& rank);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* backend() const override { return "nccl"; }

  std::unique_ptr<Work> Allreduce(torch::Tensor& tensor, ReduceOp op) override;
  std::unique_ptr<Work> Broadcast(torch::Tensor& tensor, int root) override;
  std::unique_ptr<Work> Barrier() override;

 private:
  struct Staging {
    void* device = nullptr;
    size_t bytes = 0;
  };
  void* DeviceBufferFor(const torch::Tensor& host);  // cached per host pointer
  std::unique_ptr<Work> Launch(torch::Tensor& tensor, bool broadcast, ncclRedOp_t op, int root,
                               const char* what);

  int rank_ = 0;
  int size_ = 1;
  int device_ = 0;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  std::unordered_map<const void*, Staging> staging_;
  torch::Tensor barrier_;  // one float for Barrier()
};

}  // namespace batchlab::runner

#endif  // BATCHLAB_WITH_NCCL
#endif  // BATCHLAB_RUNNER_COMM_NCCL_COMMUNICATOR_H_
