// comm.sync async_ps and backup (docs/sync.md): rank 0 holds the parameters and the optimizer and
// serves; every other rank is a worker that computes the gradient of its local batch at the
// parameters it was last sent, sends it (with its loss and the parameters' version) and waits for
// parameters back. This file holds what the two modes share and where they differ:
//   UpdateRule   which gradients make one update, one implementation per mode:
//                async_ps  the first gradient to arrive, however stale (Dean et al. 2012,
//                          Downpour SGD); the update's staleness is the number of updates since
//                          the worker's parameters;
//                backup    the server's own gradient and the first K-1-b workers' gradients of
//                          the current version; late ones are dropped and their sender gets the
//                          current parameters (Chen et al. 2016, "Revisiting Distributed
//                          Synchronous SGD").
//   ServerLink   rank 0's messages: the next gradient to arrive (round robin, so no worker
//                starves), the answer to it, the checkpoint label every worker saves under, and
//                the end of the run.
//   WorkerLink   a worker's messages: send a gradient, wait for the parameters and the reply.
// The trainer's loops (trainer_ps.cc) compute gradients, update, log, evaluate and checkpoint.
//
// A worker is sent parameters exactly once per gradient it sends, so no message is ever left
// unmatched: at the end the server answers each worker's last gradient with the final parameters
// and the run's outcome, and every rank ends with the same parameters.
//
// Messages (float32): gradient = [grad (P), loss, version]; parameters = [params (P), version,
// stop, outcome, checkpoint]. Versions are exact up to 2^24 updates.
//
//   rank 0:  ServerLink link(comm, world, P, timeout);
//            ServerLink::Arrival a = link.Next();        // a worker's gradient, loss, version
//            link.Answer(a.rank, params, reply);         // the parameters at reply.version
//            link.Close(params, reply);                  // the end: every worker answered, stop
//   others:  WorkerLink link(comm, P, timeout);
//            ServerReply r = link.Exchange(grads, loss, version, params);  // params updated
#ifndef BATCHLAB_RUNNER_SYNC_PARAMETER_SERVER_H_
#define BATCHLAB_RUNNER_SYNC_PARAMETER_SERVER_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include <torch/torch.h>

#include "base/run_protocol.h"
#include "runner/comm/communicator.h"

namespace batchlab::runner {

// Which gradients make one update of a parameter-server mode.
class UpdateRule {
 public:
  virtual ~UpdateRule() = default;
  // Whether the server computes a gradient of its own for every update (backup).
  virtual bool ServerComputes() const = 0;
  // Gradients per update, the server's own included.
  virtual int64_t Needed() const = 0;
  // Whether a worker's gradient of parameters `staleness` updates old is used (else it is
  // dropped and its sender gets the current parameters).
  virtual bool Accepts(int64_t staleness) const = 0;
};

// The update rule of each parameter-server mode, made through the mode's entry in
// sync_mode_parts.h: async_ps's first arrival, backup's quorum (b = comm.backup_workers of
// `world` ranks).
std::unique_ptr<UpdateRule> MakeFirstArrival(int world, int64_t backup_workers);
std::unique_ptr<UpdateRule> MakeBackupQuorum(int world, int64_t backup_workers);

// What the server sends with the parameters.
struct ServerReply {
  int64_t version = 0;  // the updates the parameters have had
  bool stop = false;    // the run ended: the worker returns `outcome`
  protocol::Outcome outcome = protocol::Outcome::kCompleted;
  // The server's checkpoint step the worker saves its shard under (0: none).
  int64_t checkpoint = 0;
};

class ServerLink {
 public:
  // A worker's gradient, as it arrived (valid until that worker is answered).
  struct Arrival {
    int rank = 0;
    torch::Tensor grad;  // P values, a view into the message
    double loss = 0;
    int64_t version = 0;  // of the parameters it was computed at
  };

  // Listens for every worker's first gradient.
  ServerLink(Communicator* comm, int world, int64_t param_count, std::chrono::seconds timeout);
  ServerLink(const ServerLink&) = delete;
  ServerLink& operator=(const ServerLink&) = delete;

  // The next gradient from a worker that has not been answered since; throws a kComm RunnerError
  // if none arrives within the timeout.
  Arrival Next();
  // Sends `params` to `rank`, whose gradient arrived, and (unless reply.stop) listens for its
  // next one. The reply's checkpoint is the label that worker still has to save under.
  void Answer(int rank, const std::vector<torch::Tensor>& params, ServerReply reply);
  // The server saved its checkpoint of `step`: every worker saves its shard under that label
  // with the next reply it gets.
  void LabelCheckpoint(int64_t step);
  // The end: takes every worker's last gradient still on the way, answers all with `reply`
  // (stop), and waits until every reply has left.
  void Close(const std::vector<torch::Tensor>& params, ServerReply reply);

 private:
  struct Peer {
    torch::Tensor in, out;             // its gradient message; the parameters sent to it
    std::unique_ptr<Work> recv, send;  // the pending receive of its next gradient; the last reply
    bool awaiting = false;             // its gradient arrived and has not been answered yet
    int64_t label = 0;                 // the checkpoint it has still to save under (0: none)
  };
  Peer& PeerOf(int rank) { return peers_[static_cast<size_t>(rank - 1)]; }

  Communicator* comm_;
  int64_t param_count_;
  std::chrono::seconds timeout_;
  std::vector<Peer> peers_;  // ranks 1..K-1
  size_t next_poll_ = 0;     // round robin
};

class WorkerLink {
 public:
  WorkerLink(Communicator* comm, int64_t param_count, std::chrono::seconds timeout);
  // Sends this rank's gradient of parameters at `version`, waits for the server's answer and
  // writes the parameters it carries into `params`.
  ServerReply Exchange(const torch::Tensor& grads, double loss, int64_t version,
                       std::vector<torch::Tensor>& params);

 private:
  Communicator* comm_;
  int64_t param_count_;
  std::chrono::seconds timeout_;
  torch::Tensor out_, in_;
};

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_SYNC_PARAMETER_SERVER_H_
