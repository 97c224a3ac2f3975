// MpiCommunicator (see mpi_communicator.h).
#include "runner/comm/mpi_communicator.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>

#include "runner/config/runner_error.h"

namespace batchlab::runner {
namespace {

int g_world_rank = -1;  // for error messages; -1 until MPI is initialized
// Set after an MPI error or Abandon(): MPI_Finalize would wait for peers that may never
// arrive, so the process exits without it and mpirun stops the job. (A Wait timeout alone does
// not set it: the same work may still be waited for again.)
std::atomic<bool> g_skip_finalize{false};

[[noreturn]] void ThrowMpiError(int code, const char* call, const char* file, int line) {
  g_skip_finalize = true;
  char text[MPI_MAX_ERROR_STRING] = {0};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  std::ostringstream msg;
  msg << "mpi: " << call << " failed at " << file << ":" << line << " on rank " << g_world_rank
      << ": " << std::string(text, static_cast<size_t>(length)) << " (code " << code << ")";
  throw RunnerError(RunnerError::Kind::kComm, msg.str());
}

// Every MPI call goes through this: a failure throws RunnerError naming call, file:line, rank.
#define BATCHLAB_MPI_CHECK(call)                                                      \
  do {                                                                                \
    const int batchlab_mpi_rc_ = (call);                                              \
    if (batchlab_mpi_rc_ != MPI_SUCCESS) {                                            \
      ::batchlab::runner::ThrowMpiError(batchlab_mpi_rc_, #call, __FILE__, __LINE__); \
    }                                                                                 \
  } while (false)

void FinalizeAtExit() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized && !g_skip_finalize) MPI_Finalize();
}

// MPI_Init_thread exactly once per process; MPI_Finalize runs at process exit.
void EnsureMpiInitialized() {
  static std::once_flag once;
  std::call_once(once, [] {
    int initialized = 0;
    BATCHLAB_MPI_CHECK(MPI_Initialized(&initialized));
    if (!initialized) {
      int provided = 0;
      BATCHLAB_MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided));
      std::atexit(FinalizeAtExit);
    }
    BATCHLAB_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    BATCHLAB_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &g_world_rank));
  });
}

MPI_Datatype MpiTypeOf(const torch::Tensor& t) {
  switch (t.scalar_type()) {
    case torch::kFloat32:
      return MPI_FLOAT;
    case torch::kFloat64:
      return MPI_DOUBLE;
    case torch::kInt32:
      return MPI_INT32_T;
    case torch::kInt64:
      return MPI_INT64_T;
    case torch::kUInt8:
      return MPI_UINT8_T;
    default:
      break;
  }
  throw RunnerError(RunnerError::Kind::kInternal, std::string("mpi: unsupported tensor dtype ") +
                                                      std::string(c10::toString(t.scalar_type())));
}

void CheckMpiTensor(const torch::Tensor& t, const char* call) {
  if (!t.defined() || !t.device().is_cpu() || !t.is_contiguous()) {
    throw RunnerError(RunnerError::Kind::kInternal,
                      std::string("mpi: ") + call + " needs a defined, contiguous CPU tensor");
  }
  if (t.numel() > std::numeric_limits<int>::max()) {
    throw RunnerError(RunnerError::Kind::kInternal, std::string("mpi: ") + call +
                                                        " of more than 2^31 elements; use smaller "
                                                        "buckets (comm.bucket_mb)");
  }
}

// A pending MPI request. For kAvg the sum is divided by the world size once it has arrived.
class MpiWork : public Work {
 public:
  MpiWork(MPI_Request request, const char* what, torch::Tensor tensor, double divide_by)
      : request_(request), what_(what), tensor_(std::move(tensor)), divide_by_(divide_by) {}

  bool Test() override {
    if (!done_) {
      int done = 0;
      BATCHLAB_MPI_CHECK(MPI_Test(&request_, &done, MPI_STATUS_IGNORE));
      if (!done) return false;
      done_ = true;
      if (divide_by_ != 1.0) tensor_.div_(divide_by_);
    }
    return true;
  }

  void Wait(std::chrono::milliseconds timeout) override {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (int polls = 0;; ++polls) {
      if (Test()) return;
      if (std::chrono::steady_clock::now() >= deadline) {
        std::ostringstream msg;
        msg << "mpi: " << what_ << " timed out after " << timeout.count() << " ms on rank "
            << g_world_rank << " (a rank died or stopped calling collectives)";
        throw RunnerError(RunnerError::Kind::kComm, msg.str());
      }
      // Spin briefly (small messages finish in microseconds), then back off to leave the
      // cores to the other ranks.
      if (polls < 64) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(polls < 1024 ? 20 : 200));
      }
    }
  }

 private:
  bool done_ = false;
  MPI_Request request_;
  const char* what_;
  torch::Tensor tensor_;
  double divide_by_;
};

}  // namespace

// Ends the process when a blocking call outlives its deadline (as c10d's NCCL watchdog does): a
// blocking MPI call cannot be interrupted, and exiting makes mpirun stop the whole job, so a hung
// peer never hangs the run. Arming and disarming are plain atomic stores, so the hot path makes no
// system call and wakes no thread (a wake-up per bucket cost tens of microseconds on busy cores);
// the thread looks at the deadline every kPeriod, so a timeout is noticed within kPeriod of it.
class CallWatchdog {
 public:
  static constexpr std::chrono::milliseconds kPeriod{50};

  CallWatchdog() : thread_([this] { Loop(); }) {}
  ~CallWatchdog() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  // `what` must outlive the call (a string literal).
  void Arm(std::chrono::milliseconds timeout, const char* what) {
    what_.store(what, std::memory_order_relaxed);
    timeout_ms_.store(timeout.count(), std::memory_order_relaxed);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    deadline_ticks_.store(deadline.time_since_epoch().count(), std::memory_order_release);
  }
  void Disarm() { deadline_ticks_.store(0, std::memory_order_release); }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, kPeriod, [&] { return stop_; })) {
      const int64_t deadline = deadline_ticks_.load(std::memory_order_acquire);
      if (deadline == 0 || std::chrono::steady_clock::now().time_since_epoch().count() < deadline) {
        continue;
      }
      std::fprintf(stderr,
                   "batchlab-runner[rank %d]: mpi: %s timed out after %lld ms (a rank died or "
                   "stopped calling collectives); exiting so that mpirun ends the job\n",
                   g_world_rank, what_.load(std::memory_order_relaxed),
                   static_cast<long long>(timeout_ms_.load(std::memory_order_relaxed)));
      std::fflush(stderr);
      std::_Exit(1);
    }
  }

  std::mutex mu_;  // guards stop_ only
  std::condition_variable cv_;
  bool stop_ = false;
  std::atomic<int64_t> deadline_ticks_{0};  // steady_clock ticks; 0: no call armed
  std::atomic<int64_t> timeout_ms_{0};
  std::atomic<const char*> what_{""};
  std::thread thread_;  // last: starts after every member above exists
};

MpiCommunicator::MpiCommunicator(const RankInfo& rank) {
  EnsureMpiInitialized();
  BATCHLAB_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comm_));
  BATCHLAB_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  BATCHLAB_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  BATCHLAB_MPI_CHECK(MPI_Comm_size(comm_, &size_));
  if (rank_ != rank.rank || size_ != rank.world_size) {
    std::ostringstream msg;
    msg << "mpi: MPI says rank " << rank_ << " of " << size_
        << " but the launcher environment says " << rank.rank << " of " << rank.world_size
        << "; launch with mpirun (or srun --mpi=pmix) so both agree";
    MPI_Comm_free(&comm_);
    throw RunnerError(RunnerError::Kind::kComm, msg.str());
  }
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (comm_ != MPI_COMM_NULL && !finalized && !g_skip_finalize) MPI_Comm_free(&comm_);
}

std::unique_ptr<Work> MpiCommunicator::Allreduce(torch::Tensor& tensor, ReduceOp op) {
  CheckMpiTensor(tensor, "allreduce");
  MPI_Request request;
  BATCHLAB_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, tensor.data_ptr(),
                                    static_cast<int>(tensor.numel()), MpiTypeOf(tensor), MPI_SUM,
                                    comm_, &request));
  const double divide_by = op == ReduceOp::kAvg ? static_cast<double>(size_) : 1.0;
  return std::make_unique<MpiWork>(request, "allreduce", tensor, divide_by);
}

void MpiCommunicator::AllreduceNow(torch::Tensor& tensor, ReduceOp op,
                                   std::chrono::milliseconds timeout) {
  CheckMpiTensor(tensor, "allreduce");
  if (!watchdog_) watchdog_ = std::make_unique<CallWatchdog>();
  watchdog_->Arm(timeout, "allreduce");
  const int rc = MPI_Allreduce(MPI_IN_PLACE, tensor.data_ptr(), static_cast<int>(tensor.numel()),
                               MpiTypeOf(tensor), MPI_SUM, comm_);
  watchdog_->Disarm();
  if (rc != MPI_SUCCESS) ThrowMpiError(rc, "MPI_Allreduce", __FILE__, __LINE__);
  if (op == ReduceOp::kAvg) tensor.div_(static_cast<double>(size_));
}

std::unique_ptr<Work> MpiCommunicator::Broadcast(torch::Tensor& tensor, int root) {
  CheckMpiTensor(tensor, "broadcast");
  MPI_Request request;
  BATCHLAB_MPI_CHECK(MPI_Ibcast(tensor.data_ptr(), static_cast<int>(tensor.numel()),
                                MpiTypeOf(tensor), root, comm_, &request));
  return std::make_unique<MpiWork>(request, "broadcast", tensor, 1.0);
}

std::unique_ptr<Work> MpiCommunicator::Send(const torch::Tensor& tensor, int to, int tag) {
  CheckMpiTensor(tensor, "send");
  MPI_Request request;
  BATCHLAB_MPI_CHECK(MPI_Isend(tensor.data_ptr(), static_cast<int>(tensor.numel()),
                               MpiTypeOf(tensor), to, tag, comm_, &request));
  return std::make_unique<MpiWork>(request, "send", tensor, 1.0);
}

std::unique_ptr<Work> MpiCommunicator::Recv(torch::Tensor& tensor, int from, int tag) {
  CheckMpiTensor(tensor, "recv");
  MPI_Request request;
  BATCHLAB_MPI_CHECK(MPI_Irecv(tensor.data_ptr(), static_cast<int>(tensor.numel()),
                               MpiTypeOf(tensor), from, tag, comm_, &request));
  return std::make_unique<MpiWork>(request, "recv", tensor, 1.0);
}

void MpiCommunicator::Abandon() { g_skip_finalize = true; }

std::unique_ptr<Work> MpiCommunicator::Barrier() {
  MPI_Request request;
  BATCHLAB_MPI_CHECK(MPI_Ibarrier(comm_, &request));
  return std::make_unique<MpiWork>(request, "barrier", torch::Tensor(), 1.0);
}

}  // namespace batchlab::runner
