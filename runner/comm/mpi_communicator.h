// The `mpi` communicator: OpenMPI's C API on a private duplicate of MPI_COMM_WORLD. Collectives
// are non-blocking (MPI_Iallreduce / MPI_Ibcast / MPI_Ibarrier); Work::Wait polls MPI_Test until
// the request completes or the timeout passes. MPI is initialized once per process
// (MPI_Init_thread, MPI_THREAD_FUNNELED: only the calling thread uses MPI) and finalized at exit,
// unless an MPI call failed or Abandon() was called (the runner does so when it exits on an
// error): then the process exits without MPI_Finalize, so mpirun stops the whole job at once
// instead of the peers waiting out their timeouts for this rank.
// Every MPI call goes through BATCHLAB_MPI_CHECK, which throws RunnerError (kComm) naming the
// call, file:line, the rank and MPI's error string.
//
//   auto comm = std::make_unique<MpiCommunicator>(RankInfoFromEnvironment());
//   comm->Allreduce(t, ReduceOp::kAvg)->Wait(std::chrono::seconds(60));
#ifndef BATCHLAB_RUNNER_COMM_MPI_COMMUNICATOR_H_
#define BATCHLAB_RUNNER_COMM_MPI_COMMUNICATOR_H_

#include <memory>

#include <mpi.h>

#include "runner/comm/communicator.h"

namespace batchlab::runner {

class CallWatchdog;  // mpi_communicator.cc

class MpiCommunicator : public Communicator {
 public:
  // Initializes MPI if needed; throws RunnerError (kComm) if MPI's rank/size disagree with `rank`
  // (e.g. a launcher environment that is not mpirun's).
  explicit MpiCommunicator(const RankInfo& rank);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* backend() const override { return "mpi"; }

  std::unique_ptr<Work> Allreduce(torch::Tensor& tensor, ReduceOp op) override;
  void AllreduceNow(torch::Tensor& tensor, ReduceOp op, std::chrono::milliseconds timeout) override;
  std::unique_ptr<Work> Broadcast(torch::Tensor& tensor, int root) override;
  std::unique_ptr<Work> Barrier() override;
  std::unique_ptr<Work> Send(const torch::Tensor& tensor, int to, int tag) override;
  std::unique_ptr<Work> Recv(torch::Tensor& tensor, int from, int tag) override;
  void Abandon() override;  // skip MPI_Finalize at exit (also done after any MPI error)

 private:
  std::unique_ptr<CallWatchdog> watchdog_;  // for AllreduceNow, started on first use
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_COMM_MPI_COMMUNICATOR_H_
