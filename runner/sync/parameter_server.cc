// The parameter-server modes' messages and update rules (see parameter_server.h).
#include "runner/sync/parameter_server.h"

#include <string>
#include <thread>

#include "runner/config/runner_error.h"
#include "runner/sync/flat_tensors.h"

namespace batchlab::runner {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kGradientTag = 11;
constexpr int kParamsTag = 12;

// async_ps: every gradient is an update, however stale.
class FirstArrival final : public UpdateRule {
 public:
  bool ServerComputes() const override { return false; }
  int64_t Needed() const override { return 1; }
  bool Accepts(int64_t /*staleness*/) const override { return true; }
};

// backup: the server's gradient and the first K-1-b workers' gradients of the current version.
class BackupQuorum final : public UpdateRule {
 public:
  explicit BackupQuorum(int64_t needed) : needed_(needed) {}
  bool ServerComputes() const override { return true; }
  int64_t Needed() const override { return needed_; }
  bool Accepts(int64_t staleness) const override { return staleness <= 0; }

 private:
  int64_t needed_;
};

// Backs off like MpiWork::Wait: spin briefly, then leave the cores to the ranks that compute.
void Pause(int polls) {
  if (polls < 64) {
    std::this_thread::yield();
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(polls < 1024 ? 20 : 200));
  }
}

}  // namespace

std::unique_ptr<UpdateRule> MakeFirstArrival(int /*world*/, int64_t /*backup_workers*/) {
  return std::make_unique<FirstArrival>();
}

std::unique_ptr<UpdateRule> MakeBackupQuorum(int world, int64_t backup_workers) {
  return std::make_unique<BackupQuorum>(world - backup_workers);
}

ServerLink::ServerLink(Communicator* comm, int world, int64_t param_count,
                       std::chrono::seconds timeout)
    : comm_(comm), param_count_(param_count), timeout_(timeout) {
  peers_.resize(static_cast<size_t>(world - 1));
  for (size_t i = 0; i < peers_.size(); ++i) {
    Peer& peer = peers_[i];
    peer.in = torch::zeros({param_count + 2});
    peer.out = torch::zeros({param_count + 4});
    peer.recv = comm_->Recv(peer.in, static_cast<int>(i) + 1, kGradientTag);
  }
}

ServerLink::Arrival ServerLink::Next() {
  const auto deadline = Clock::now() + timeout_;
  for (int polls = 0;; ++polls) {
    for (size_t k = 0; k < peers_.size(); ++k) {
      const size_t i = (next_poll_ + k) % peers_.size();
      Peer& peer = peers_[i];
      if (!peer.awaiting && peer.recv && peer.recv->Test()) {
        next_poll_ = (i + 1) % peers_.size();
        peer.recv.reset();
        peer.awaiting = true;
        const float* in = peer.in.data_ptr<float>();
        return {static_cast<int>(i) + 1, peer.in.narrow(0, 0, param_count_),
                static_cast<double>(in[param_count_]), static_cast<int64_t>(in[param_count_ + 1])};
      }
    }
    if (Clock::now() >= deadline) {
      throw RunnerError(RunnerError::Kind::kComm,
                        "parameter server: no gradient from any worker within "
                        "comm.timeout_seconds = " +
                            std::to_string(timeout_.count()) +
                            " s (a worker died or stopped sending)");
    }
    Pause(polls);
  }
}

void ServerLink::Answer(int rank, const std::vector<torch::Tensor>& params, ServerReply reply) {
  Peer& peer = PeerOf(rank);
  if (peer.send) peer.send->Wait(timeout_);  // its previous reply has left this buffer
  PackInto(params, peer.out);
  float* o = peer.out.data_ptr<float>();
  o[param_count_] = static_cast<float>(reply.version);
  o[param_count_ + 1] = reply.stop ? 1.0f : 0.0f;
  o[param_count_ + 2] = static_cast<float>(static_cast<int>(reply.outcome));
  o[param_count_ + 3] = static_cast<float>(reply.checkpoint > 0 ? reply.checkpoint : peer.label);
  peer.label = 0;
  peer.send = comm_->Send(peer.out, rank, kParamsTag);
  peer.awaiting = false;
  if (!reply.stop) peer.recv = comm_->Recv(peer.in, rank, kGradientTag);
}

void ServerLink::LabelCheckpoint(int64_t step) {
  for (Peer& peer : peers_) peer.label = step;
}

void ServerLink::Close(const std::vector<torch::Tensor>& params, ServerReply reply) {
  reply.stop = true;
  for (size_t i = 0; i < peers_.size(); ++i) {
    Peer& peer = peers_[i];
    if (!peer.awaiting) {  // its last gradient is still on the way: take it, then answer
      peer.recv->Wait(timeout_);
      peer.recv.reset();
    }
    Answer(static_cast<int>(i) + 1, params, reply);
  }
  for (Peer& peer : peers_) peer.send->Wait(timeout_);
}

WorkerLink::WorkerLink(Communicator* comm, int64_t param_count, std::chrono::seconds timeout)
    : comm_(comm),
      param_count_(param_count),
      timeout_(timeout),
      out_(torch::zeros({param_count + 2})),
      in_(torch::zeros({param_count + 4})) {}

ServerReply WorkerLink::Exchange(const torch::Tensor& grads, double loss, int64_t version,
                                 std::vector<torch::Tensor>& params) {
  float* o = out_.data_ptr<float>();
  out_.narrow(0, 0, param_count_).copy_(grads);
  o[param_count_] = static_cast<float>(loss);
  o[param_count_ + 1] = static_cast<float>(version);
  comm_->Send(out_, 0, kGradientTag)->Wait(timeout_);
  comm_->Recv(in_, 0, kParamsTag)->Wait(timeout_);
  UnpackFrom(in_, params);
  const float* i = in_.data_ptr<float>();
  ServerReply reply;
  reply.version = static_cast<int64_t>(i[param_count_]);
  reply.stop = i[param_count_ + 1] > 0;
  reply.outcome = static_cast<protocol::Outcome>(static_cast<int>(i[param_count_ + 2]));
  reply.checkpoint = static_cast<int64_t>(i[param_count_ + 3]);
  return reply;
}

}  // namespace batchlab::runner
