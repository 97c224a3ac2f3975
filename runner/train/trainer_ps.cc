// The trainer's loops for comm.sync async_ps and backup (see trainer.h, docs/sync.md): rank 0
// serves (RunServer), the other ranks work (RunWorker). The messages and each mode's update rule
// are in sync/parameter_server.h; here the gradients are computed, the updates applied, logged,
// evaluated and checkpointed.
//
// Checkpoints (trainer_checkpoint.cc): the server decides. At its cadence it saves its shard
// (parameters, optimizer, step, its data cursor) after update s and labels the next reply to
// every worker with s; each worker saves its own shard (its data cursor and generator) under that
// label when the reply arrives. Asynchronous updates are not reproducible run to run, so a
// resumed PS run goes on from the server's state, not bit for bit. A preempt request (any rank's
// signal, the preempt file) ends the run at the server's next update: every rank saves step s,
// and all exit 7.
#include <chrono>
#include <vector>

#include "base/elapsed.h"
#include "runner/optim/optimizer_factory.h"
#include "runner/sync/parameter_server.h"
#include "runner/sync/sync_mode_parts.h"
#include "runner/train/trainer.h"

namespace batchlab::runner {
namespace {

using Clock = std::chrono::steady_clock;


// The parameters at `version`, training goes on.
ServerReply GoOn(int64_t version) {
  ServerReply reply;
  reply.version = version;
  return reply;
}

}  // namespace

Outcome Trainer::RunServer() {
  const std::unique_ptr<UpdateRule> rule =
      PartsOf(config_.comm.sync).update_rule(world_, config_.comm.backup_workers);
  ServerLink link(comm_, world_, param_count_, std::chrono::seconds(config_.comm.timeout_seconds));
  Progress& p = progress_;
  bool preempted = false;
  torch::Tensor sum = torch::zeros({param_count_});
  while (total_steps_ == 0 || step_ < total_steps_) {
    ++step_;  // the update being built; the parameters are at version step_ - 1
    const Clock::time_point t0 = Clock::now();
    sum.zero_();
    int64_t count = 0;
    double loss_sum = 0, stale_sum = 0;
    std::vector<int> used;  // the workers whose gradients this update holds
    Clock::time_point t1 = t0;
    if (rule->ServerComputes()) {
      GatherBatch();
      t1 = Clock::now();
      loss_sum += ComputeGradients(false);
      straggler_->MaybeDelay(step_);
      sum.add_(grads_);
      ++count;
    }
    const Clock::time_point t2 = Clock::now();
    while (count < rule->Needed()) {
      const ServerLink::Arrival a = link.Next();
      const int64_t staleness = (step_ - 1) - a.version;
      if (!rule->Accepts(staleness)) {  // a gradient of older parameters: dropped
        link.Answer(a.rank, params_, GoOn(step_ - 1));
        continue;
      }
      sum.add_(a.grad);
      loss_sum += a.loss;
      stale_sum += static_cast<double>(staleness);
      ++count;
      used.push_back(a.rank);
    }
    const Clock::time_point t3 = Clock::now();
    grads_.copy_(sum);
    if (count > 1) grads_.div_(static_cast<double>(count));
    const double lr = lr_->At(step_ - 1);
    SetLearningRate(*optimizer_, lr);
    optimizer_->step();
    const Clock::time_point t4 = Clock::now();
    const double loss = loss_sum / static_cast<double>(count);
    p.elapsed = SecondsBetween(start_, t4);
    losses_.push_back(loss);
    SyncFacts facts;
    facts.wait_seconds = SecondsBetween(t2, t3);
    facts.staleness = stale_sum / static_cast<double>(count);
    facts.effective_batch = count * config_.local_batch_size;
    if (metrics_ != nullptr) {
      nlohmann::ordered_json line = StepLine(loss, facts);
      line["lr"] = lr;
      line[protocol::kMetricStepSeconds] = SecondsBetween(t0, t4);
      line["data_seconds"] = SecondsBetween(t0, t1);
      line["compute_seconds"] = SecondsBetween(t1, t2);
      line[protocol::kMetricCommSeconds] = SecondsBetween(t2, t3);
      line["optim_seconds"] = SecondsBetween(t3, t4);
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
      link.LabelCheckpoint(step_);
    }
    for (int rank : used) link.Answer(rank, params_, GoOn(step_));
  }

  // The final evaluation first, so the outcome sent to the workers is the run's.
  if (!preempted && !p.diverged && !p.stopped && p.last_eval_step != step_) {
    EvalAndLog(/*collective=*/false);
  }
  ServerReply end = GoOn(step_);
  end.outcome = preempted ? Outcome::kPreempted : CurrentOutcome();
  if (preempted) end.checkpoint = step_;  // every worker saves step_ (the server's) and exits
  link.Close(params_, end);
  if (preempted) return Outcome::kPreempted;  // no end line: a new attempt resumes
  return Finish(/*collective_eval=*/false);
}

Outcome Trainer::RunWorker() {
  WorkerLink link(comm_, param_count_, std::chrono::seconds(config_.comm.timeout_seconds));
  int64_t version = step_;  // 0, or the step a resumed run goes on from
  for (;;) {
    GatherBatch();
    const double loss = ComputeGradients(false);
    straggler_->MaybeDelay(version + 1);  // the step this gradient is for, as the server counts
    const ServerReply reply = link.Exchange(grads_, loss, version, params_);
    version = reply.version;
    if (reply.checkpoint > 0 && CheckpointsEnabled()) {
      step_ = reply.checkpoint;  // the server's checkpoint this shard belongs to
      SaveCheckpoint();
    }
    step_ = version;
    if (reply.stop) return reply.outcome;
  }
}

}  // namespace batchlab::runner
