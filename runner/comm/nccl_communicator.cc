// NcclCommunicator (see nccl_communicator.h). Compiled only with BATCHLAB_WITH_NCCL; run on an H100
// (docs/runner-comm.md, "nccl").
#include "runner/comm/nccl_communicator.h"

#ifdef BATCHLAB_WITH_NCCL

#include <chrono>
#include <sstream>
#include <string>
#include <thread>

#include "runner/comm/mpi_communicator.h"
#include "runner/config/runner_error.h"

namespace batchlab::runner {
namespace {

int g_rank = -1;  // for error messages

[[noreturn]] void ThrowCommError(const std::string& detail, const char* call, const char* file,
                                 int line) {
  std::ostringstream msg;
  msg << "nccl: " << call << " failed at " << file << ":" << line << " on rank " << g_rank << ": "
      << detail;
  throw RunnerError(RunnerError::Kind::kComm, msg.str());
}

#define BATCHLAB_CUDA_CHECK(call)                                                                \
  do {                                                                                           \
    const cudaError_t batchlab_cuda_rc_ = (call);                                                \
    if (batchlab_cuda_rc_ != cudaSuccess) {                                                      \
      ::batchlab::runner::ThrowCommError(cudaGetErrorString(batchlab_cuda_rc_), #call, __FILE__, \
                                         __LINE__);                                              \
    }                                                                                            \
  } while (false)

#define BATCHLAB_NCCL_CHECK(call)                                                                \
  do {                                                                                           \
    const ncclResult_t batchlab_nccl_rc_ = (call);                                               \
    if (batchlab_nccl_rc_ != ncclSuccess) {                                                      \
      ::batchlab::runner::ThrowCommError(ncclGetErrorString(batchlab_nccl_rc_), #call, __FILE__, \
                                         __LINE__);                                              \
    }                                                                                            \
  } while (false)

ncclDataType_t NcclTypeOf(const torch::Tensor& t) {
  switch (t.scalar_type()) {
    case torch::kFloat32:
      return ncclFloat32;
    case torch::kFloat64:
      return ncclFloat64;
    case torch::kFloat16:
      return ncclFloat16;
    case torch::kBFloat16:
      return ncclBfloat16;
    case torch::kInt32:
      return ncclInt32;
    case torch::kInt64:
      return ncclInt64;
    case torch::kUInt8:
      return ncclUint8;
    default:
      break;
  }
  throw RunnerError(RunnerError::Kind::kInternal, "nccl: unsupported tensor dtype");
}

class NcclWork : public Work {
 public:
  NcclWork(cudaEvent_t done, ncclComm_t comm, const char* what)
      : done_(done), comm_(comm), what_(what) {}
  ~NcclWork() override { cudaEventDestroy(done_); }

  void Wait(std::chrono::milliseconds timeout) override {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const cudaError_t state = cudaEventQuery(done_);
      if (state == cudaSuccess) return;
      if (state != cudaErrorNotReady) BATCHLAB_CUDA_CHECK(state);
      ncclResult_t async = ncclSuccess;
      BATCHLAB_NCCL_CHECK(ncclCommGetAsyncError(comm_, &async));
      BATCHLAB_NCCL_CHECK(async);
      if (std::chrono::steady_clock::now() >= deadline) {
        ncclCommAbort(comm_);  // the communicator is unusable after a timed-out collective
        std::ostringstream msg;
        msg << "nccl: " << what_ << " timed out after " << timeout.count() << " ms on rank "
            << g_rank;
        throw RunnerError(RunnerError::Kind::kComm, msg.str());
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  bool Test() override { return cudaEventQuery(done_) == cudaSuccess; }

 private:
  cudaEvent_t done_;
  ncclComm_t comm_;
  const char* what_;
};

}  // namespace

NcclCommunicator::NcclCommunicator(const CommConfig& config, const RankInfo& rank)
    : rank_(rank.rank), size_(rank.world_size) {
  (void)config;
  g_rank = rank_;
  int devices = 0;
  BATCHLAB_CUDA_CHECK(cudaGetDeviceCount(&devices));
  if (devices < 1) {
    throw RunnerError(RunnerError::Kind::kComm, "nccl: no CUDA device on this node");
  }
  // NCCL refuses two ranks of one communicator on one device ("Duplicate GPU detected",
  // ncclInvalidUsage at init): say so before, in terms of the run config.
  if (const int local = rank.local_size; local > devices) {
    throw BadConfig("comm.backend: \"nccl\" needs a CUDA device per rank, but " +
                    std::to_string(local) + " ranks on this node share " + std::to_string(devices) +
                    " device(s); launch at most that many ranks per node (ranks_per_node) or use "
                    "comm.backend \"mpi\" or \"gloo\"");
  }
  device_ = rank.local_rank % devices;
  BATCHLAB_CUDA_CHECK(cudaSetDevice(device_));

  // Rank 0 creates the NCCL id; MPI carries it to the others.
  ncclUniqueId id;
  if (rank_ == 0) BATCHLAB_NCCL_CHECK(ncclGetUniqueId(&id));
  {
    MpiCommunicator bootstrap(rank);
    torch::Tensor bytes = torch::from_blob(&id, {static_cast<int64_t>(sizeof(id))}, torch::kUInt8);
    bootstrap.Broadcast(bytes, 0)->Wait(std::chrono::seconds(config.timeout_seconds));
  }
  BATCHLAB_NCCL_CHECK(ncclCommInitRank(&comm_, size_, id, rank_));
  BATCHLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  barrier_ = torch::zeros({1}, torch::kFloat32);
}

NcclCommunicator::~NcclCommunicator() {
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  for (auto& [host, staging] : staging_) cudaFree(staging.device);
  if (comm_ != nullptr) ncclCommDestroy(comm_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

void* NcclCommunicator::DeviceBufferFor(const torch::Tensor& host) {
  const size_t bytes = static_cast<size_t>(host.numel()) * host.element_size();
  Staging& s = staging_[host.data_ptr()];
  if (s.bytes < bytes) {
    if (s.device != nullptr) {
      BATCHLAB_CUDA_CHECK(cudaStreamSynchronize(stream_));
      BATCHLAB_CUDA_CHECK(cudaFree(s.device));
    }
    BATCHLAB_CUDA_CHECK(cudaMalloc(&s.device, bytes));
    s.bytes = bytes;
  }
  return s.device;
}

std::unique_ptr<Work> NcclCommunicator::Launch(torch::Tensor& tensor, bool broadcast,
                                               ncclRedOp_t op, int root, const char* what) {
  if (!tensor.defined() || !tensor.is_contiguous()) {
    throw RunnerError(RunnerError::Kind::kInternal,
                      std::string("nccl: ") + what + " needs a defined, contiguous tensor");
  }
  const size_t count = static_cast<size_t>(tensor.numel());
  const size_t bytes = count * tensor.element_size();
  const bool on_host = tensor.device().is_cpu();
  void* buffer = on_host ? DeviceBufferFor(tensor) : tensor.data_ptr();
  // A device tensor is reduced in place on the default stream, LibTorch's: after the kernels
  // that wrote it and before those that read it, with no copy and no host wait in between. A
  // host tensor goes through the staging buffer on the communicator's own stream.
  cudaStream_t stream = on_host ? stream_ : nullptr;
  if (on_host) {
    BATCHLAB_CUDA_CHECK(
        cudaMemcpyAsync(buffer, tensor.data_ptr(), bytes, cudaMemcpyHostToDevice, stream));
  }
  if (broadcast) {
    BATCHLAB_NCCL_CHECK(
        ncclBroadcast(buffer, buffer, count, NcclTypeOf(tensor), root, comm_, stream));
  } else {
    BATCHLAB_NCCL_CHECK(
        ncclAllReduce(buffer, buffer, count, NcclTypeOf(tensor), op, comm_, stream));
  }
  if (on_host) {
    BATCHLAB_CUDA_CHECK(
        cudaMemcpyAsync(tensor.data_ptr(), buffer, bytes, cudaMemcpyDeviceToHost, stream));
  }
  cudaEvent_t done;
  BATCHLAB_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  BATCHLAB_CUDA_CHECK(cudaEventRecord(done, stream));
  return std::make_unique<NcclWork>(done, comm_, what);
}

std::unique_ptr<Work> NcclCommunicator::Allreduce(torch::Tensor& tensor, ReduceOp op) {
  return Launch(tensor, false, op == ReduceOp::kAvg ? ncclAvg : ncclSum, 0, "allreduce");
}

std::unique_ptr<Work> NcclCommunicator::Broadcast(torch::Tensor& tensor, int root) {
  return Launch(tensor, true, ncclSum, root, "broadcast");
}

std::unique_ptr<Work> NcclCommunicator::Barrier() {
  return Launch(barrier_, false, ncclSum, 0, "barrier");
}

}  // namespace batchlab::runner

#endif  // BATCHLAB_WITH_NCCL
