// The `gloo` communicator: LibTorch's c10d ProcessGroupGloo. Ranks meet through a c10d store:
// a FileStore at CommConfig::rendezvous (a path on a file system every rank sees; the store
// deletes the file once every rank has closed it) or, when rendezvous is "host:port", a TCPStore
// that rank 0 serves. The transport binds to the interface named by GLOO_SOCKET_IFNAME if set,
// else to the address of this host's name (loopback if it does not resolve).
//
//   CommConfig c{.backend = "gloo", .rendezvous = DefaultRendezvous(metrics_path)};
//   auto comm = std::make_unique<GlooCommunicator>(c, RankInfoFromEnvironment());
//   comm->Allreduce(t, ReduceOp::kAvg)->Wait(std::chrono::seconds(60));
//
// Gloo has no average: kAvg is a sum divided by the world size after the sum has arrived.
// Errors (rendezvous timeout, a peer that went away) throw RunnerError (kComm) naming the call,
// the rank and c10d's message.
#ifndef BATCHLAB_RUNNER_COMM_GLOO_COMMUNICATOR_H_
#define BATCHLAB_RUNNER_COMM_GLOO_COMMUNICATOR_H_

#include <memory>

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "runner/comm/communicator.h"

namespace batchlab::runner {

class GlooCommunicator : public Communicator {
 public:
  GlooCommunicator(const CommConfig& config, const RankInfo& rank);
  ~GlooCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* backend() const override { return "gloo"; }

  std::unique_ptr<Work> Allreduce(torch::Tensor& tensor, ReduceOp op) override;
  std::unique_ptr<Work> Broadcast(torch::Tensor& tensor, int root) override;
  std::unique_ptr<Work> Barrier() override;

 private:
  int rank_ = 0;
  int size_ = 1;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group_;
};

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_COMM_GLOO_COMMUNICATOR_H_
