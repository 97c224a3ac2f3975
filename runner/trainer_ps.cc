// The parameter-server loops of comm.sync async_ps and backup (see trainer.h, docs/sync.md).
//
// Rank 0 holds the parameters and the optimizer; every other rank is a worker that computes the
// gradient of its local batch at the parameters it was last sent, sends it (with its loss and
// the parameters' version) and waits for parameters back. The server builds each update from
//   async_ps  the first gradient to arrive, however stale (Dean et al. 2012, Downpour SGD): the
//             update's staleness is the number of updates since the worker's parameters;
//   backup    its own gradient and the first K-1-b workers' gradients of the current version;
//             late ones are dropped and their sender gets the current parameters (Chen et al.
//             2016, "Revisiting Distributed Synchronous SGD").
// A worker is sent parameters exactly once per gradient it sends, so no message is ever left
// unmatched: at the end the server answers each worker's last gradient with the final parameters
// and the run's outcome, and every rank ends with the same parameters.
//
// Messages (float32): gradient = [grad (P), loss, version]; parameters = [params (P), version,
// stop, outcome, checkpoint]. Versions are exact up to 2^24 updates.
//
// Checkpoints (trainer_checkpoint.cc): the server decides. At its cadence it saves its shard
// (parameters, optimizer, step, its data cursor) after update s and labels the next reply to
// every worker with s; each worker saves its own shard (its data cursor and generator) under that
// label when the reply arrives. Asynchronous updates are not reproducible run to run, so a
// resumed PS run goes on from the server's state, not bit for bit. A preempt request (any rank's
// signal, the preempt file) ends the run at the server's next update: every rank saves step s,
// and all exit 7.
#include <chrono>
#include <thread>
#include <vector>

#include "runner/optimizer_factory.h"
#include "runner/runner_error.h"
#include "runner/sync/flat_tensors.h"
#include "runner/trainer.h"

namespace batchlab::runner {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kGradientTag = 11;
constexpr int kParamsTag = 12;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// One worker as the server sees it.
struct Peer {
  int rank = 0;
  torch::Tensor in, out;             // its gradient message; the parameters sent to it
  std::unique_ptr<Work> recv, send;  // the pending receive of its next gradient; the last reply
  bool awaiting = false;             // its gradient arrived and has not been answered yet
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

Outcome Trainer::RunServer() {
  const bool backup = sync_ == SyncMode::kBackup;
  const auto timeout = std::chrono::seconds(config_.comm.timeout_seconds);
  const int64_t p_count = param_count_;
  const int64_t need = backup ? world_ - config_.comm.backup_workers : 1;
  std::vector<Peer> peers(static_cast<size_t>(world_ - 1));
  for (size_t i = 0; i < peers.size(); ++i) {
    Peer& peer = peers[i];
    peer.rank = static_cast<int>(i) + 1;
    peer.in = torch::zeros({p_count + 2});
    peer.out = torch::zeros({p_count + 4});
    peer.recv = comm_->Recv(peer.in, peer.rank, kGradientTag);
  }
  // Answers `peer`'s gradient with the current parameters, which are at `version` (and, unless
  // stopping, listens again).
  // The checkpoint label each worker has still to save under (0: none).
  std::vector<int64_t> label(peers.size(), 0);
  auto reply = [&](Peer& peer, int64_t version, bool stop, Outcome outcome) {
    if (peer.send) peer.send->Wait(timeout);  // its previous reply has left this buffer
    PackInto(params_, peer.out);
    float* o = peer.out.data_ptr<float>();
    o[p_count] = static_cast<float>(version);
    o[p_count + 1] = stop ? 1.0f : 0.0f;
    o[p_count + 2] = static_cast<float>(static_cast<int>(outcome));
    int64_t& mine = label[static_cast<size_t>(peer.rank - 1)];
    o[p_count + 3] = static_cast<float>(outcome == Outcome::kPreempted ? version : mine);
    mine = 0;
    peer.send = comm_->Send(peer.out, peer.rank, kParamsTag);
    peer.awaiting = false;
    if (!stop) peer.recv = comm_->Recv(peer.in, peer.rank, kGradientTag);
  };
  size_t next_poll = 0;  // round robin, so no worker is starved
  auto next_arrival = [&]() -> Peer& {
    const auto deadline = Clock::now() + timeout;
    for (int polls = 0;; ++polls) {
      for (size_t k = 0; k < peers.size(); ++k) {
        Peer& peer = peers[(next_poll + k) % peers.size()];
        if (!peer.awaiting && peer.recv && peer.recv->Test()) {
          next_poll = (next_poll + k + 1) % peers.size();
          peer.recv.reset();
          peer.awaiting = true;
          return peer;
        }
      }
      if (Clock::now() >= deadline) {
        throw RunnerError(RunnerError::Kind::kComm,
                          "parameter server: no gradient from any worker within "
                          "comm.timeout_seconds = " +
                              std::to_string(config_.comm.timeout_seconds) +
                              " s (a worker died or stopped sending)");
      }
      Pause(polls);
    }
  };

  Progress& p = progress_;
  bool preempted = false;
  torch::Tensor sum = torch::zeros({p_count});
  while (total_steps_ == 0 || step_ < total_steps_) {
    ++step_;  // the update being built; the parameters are at version step_ - 1
    const Clock::time_point t0 = Clock::now();
    sum.zero_();
    int64_t count = 0;
    double loss_sum = 0, stale_sum = 0;
    std::vector<Peer*> used;
    Clock::time_point t1 = t0;
    if (backup) {  // the server computes too
      GatherBatch();
      t1 = Clock::now();
      loss_sum += ComputeGradients(false);
      straggler_->MaybeDelay(step_);
      sum.add_(grads_);
      ++count;
    }
    const Clock::time_point t2 = Clock::now();
    while (count < need) {
      Peer& peer = next_arrival();
      const float* in = peer.in.data_ptr<float>();
      const double staleness = static_cast<double>(step_ - 1) - in[p_count + 1];
      if (backup && staleness > 0) {  // a gradient of older parameters: dropped
        reply(peer, step_ - 1, false, Outcome::kCompleted);
        continue;
      }
      sum.add_(peer.in.narrow(0, 0, p_count));
      loss_sum += in[p_count];
      stale_sum += staleness;
      ++count;
      used.push_back(&peer);
    }
    const Clock::time_point t3 = Clock::now();
    grads_.copy_(sum);
    if (count > 1) grads_.div_(static_cast<double>(count));
    const double lr = lr_->At(step_ - 1);
    SetLearningRate(*optimizer_, lr);
    optimizer_->step();
    const Clock::time_point t4 = Clock::now();
    const double loss = loss_sum / static_cast<double>(count);
    p.elapsed = Seconds(start_, t4);
    losses_.push_back(loss);
    SyncFacts facts;
    facts.wait_seconds = Seconds(t2, t3);
    facts.staleness = stale_sum / static_cast<double>(count);
    facts.effective_batch = count * config_.local_batch_size;
    if (metrics_ != nullptr) {
      nlohmann::ordered_json line = StepLine(loss, facts);
      line["lr"] = lr;
      line["step_seconds"] = Seconds(t0, t4);
      line["data_seconds"] = Seconds(t0, t1);
      line["compute_seconds"] = Seconds(t1, t2);
      line["comm_seconds"] = Seconds(t2, t3);
      line["optim_seconds"] = Seconds(t3, t4);
      metrics_->Write(line);
    }
    const bool end = Decide(loss, StopRequested(), /*collective_eval=*/false) ||
                     (total_steps_ > 0 && step_ >= total_steps_);
    if (end) break;
    if (PreemptRequested() && CheckpointsEnabled()) {
      preempted = true;
      SaveCheckpoint();
      break;
    }
    if (step_ != total_steps_ && CheckpointDue()) {
      SaveCheckpoint();
      for (int64_t& l : label) l = step_;
    }
    for (Peer* peer : used) reply(*peer, step_, false, Outcome::kCompleted);
  }

  // The final evaluation first, so the outcome sent to the workers is the run's.
  if (!preempted && !p.diverged && !p.stopped && p.last_eval_step != step_) {
    EvalAndLog(/*collective=*/false);
  }
  const Outcome outcome = preempted ? Outcome::kPreempted : CurrentOutcome();
  for (Peer& peer : peers) {
    if (!peer.awaiting) {  // its last gradient is still on the way: take it, then answer
      peer.recv->Wait(timeout);
      peer.recv.reset();
    }
    reply(peer, step_, /*stop=*/true, outcome);
  }
  for (Peer& peer : peers) peer.send->Wait(timeout);
  if (preempted) return Outcome::kPreempted;  // no end line: a new attempt resumes
  return Finish(/*collective_eval=*/false);
}

Outcome Trainer::RunWorker() {
  const auto timeout = std::chrono::seconds(config_.comm.timeout_seconds);
  const int64_t p_count = param_count_;
  torch::Tensor out = torch::zeros({p_count + 2});
  torch::Tensor in = torch::zeros({p_count + 4});
  float* o = out.data_ptr<float>();
  const float* i = in.data_ptr<float>();
  int64_t version = step_;  // 0, or the step a resumed run goes on from
  for (;;) {
    GatherBatch();
    const double loss = ComputeGradients(false);
    straggler_->MaybeDelay(version + 1);  // the step this gradient is for, as the server counts
    out.narrow(0, 0, p_count).copy_(grads_);
    o[p_count] = static_cast<float>(loss);
    o[p_count + 1] = static_cast<float>(version);
    comm_->Send(out, 0, kGradientTag)->Wait(timeout);
    comm_->Recv(in, 0, kParamsTag)->Wait(timeout);
    UnpackFrom(in, params_);
    version = static_cast<int64_t>(i[p_count]);
    if (const auto at = static_cast<int64_t>(i[p_count + 3]); at > 0 && CheckpointsEnabled()) {
      step_ = at;  // the server's checkpoint this shard belongs to
      SaveCheckpoint();
    }
    step_ = version;
    if (i[p_count + 1] > 0) return static_cast<Outcome>(static_cast<int>(i[p_count + 2]));
  }
}

}  // namespace batchlab::runner
