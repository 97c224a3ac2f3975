// The collective sync modes' step exchanges (see step_exchange.h).
#include "runner/sync/step_exchange.h"

#include "base/elapsed.h"
#include "runner/comm/gradient_buckets.h"
#include "runner/optim/optimizer_factory.h"
#include "runner/config/runner_error.h"
#include "runner/sync/lagged_gradient.h"
#include "runner/sync/parameter_average.h"

namespace batchlab::runner {
namespace {

using Clock = std::chrono::steady_clock;

// The slots of the step's shared values: allreduce K > 1 sends them as a 5-element "gradient"
// bucketed and summed with the real ones (no extra collective); lag and local_sgd average them.
constexpr int64_t kLossSlot = 0;     // local mean loss          -> global mean loss
constexpr int64_t kLocalSqSlot = 1;  // |local gradient|^2       -> mean over ranks
constexpr int64_t kElapsedSlot = 2;  // seconds since start      -> mean over ranks
constexpr int64_t kStopSlot = 3;     // rank 0 saw the stop file -> > 0 on every rank
constexpr int64_t kPreemptSlot = 4;  // a rank was signalled     -> > 0 on every rank
constexpr int64_t kStatSlots = 5;

// lag, local_sgd: the shared values in a tensor of their own, averaged over the ranks.
class SharedValues {
 public:
  SharedValues() : tensor_(torch::zeros({kStatSlots})), v_(tensor_.data_ptr<float>()) {}
  void Fill(const SyncContext& c, double local_loss, Clock::time_point start,
            Clock::time_point now) {
    v_[kLossSlot] = static_cast<float>(local_loss);
    v_[kLocalSqSlot] = 0.0f;
    v_[kElapsedSlot] = static_cast<float>(SecondsBetween(start, now));
    v_[kStopSlot] = c.stop_requested() ? 1.0f : 0.0f;
    v_[kPreemptSlot] = c.preempt_requested() ? 1.0f : 0.0f;
  }
  // The averaged values into the result (the elapsed seconds only where ranks share them).
  void Read(int world, ExchangeResult* r) const {
    r->stop = v_[kStopSlot] > 0;
    r->preempt = v_[kPreemptSlot] > 0;
    r->loss = v_[kLossSlot];
    if (world > 1) r->elapsed = v_[kElapsedSlot];
  }
  torch::Tensor& tensor() { return tensor_; }

 private:
  torch::Tensor tensor_;
  float* v_;
};

// comm.sync "allreduce": every step's gradients averaged before the update.
class AllreduceExchange : public StepExchange {
 public:
  explicit AllreduceExchange(SyncContext c) : c_(std::move(c)) {
    if (c_.world == 1) return;
    host_stats_ = torch::zeros({kStatSlots});
    stats_ = torch::zeros({kStatSlots}, c_.options.requires_grad(true));
    stats_.mutable_grad() = torch::zeros({kStatSlots}, c_.options);
    std::vector<torch::Tensor> bucketed = c_.params;
    bucketed.push_back(stats_);  // last, so the model's gradients keep their natural order
    buckets_ = std::make_unique<GradientBuckets>(bucketed, c_.bucket_mb);
    buckets_->BroadcastParameters(*c_.comm, c_.timeout);
    grad_scale_ = 1.0 / static_cast<double>(c_.world);
  }

  ExchangeResult Exchange(const StepInputs& in) override {
    ExchangeResult r;
    r.facts.effective_batch = in.batch;
    r.loss = in.local_loss;
    if (!buckets_) {  // one rank: nothing to average
      r.stop = c_.stop_requested();
      r.preempt = c_.preempt_requested();
      return r;
    }
    // The shared values, written on the host and copied into the last bucket's slot (on a CUDA
    // rank a device buffer), read back after the exchange. Summed like the gradients, so each
    // carries 1/K (the local gradient holds 1/K already: |g/K|^2 * K = |g|^2 / K).
    float* extra = host_stats_.data_ptr<float>();
    const double s = grad_scale_;
    extra[kLossSlot] = static_cast<float>(in.local_loss * s);
    extra[kLocalSqSlot] =
        in.measure
            ? static_cast<float>(c_.grad_squared_norm() / s / (in.loss_scale * in.loss_scale))
            : 0.0f;
    extra[kElapsedSlot] = static_cast<float>(SecondsBetween(in.start, in.computed) * s);
    extra[kStopSlot] = c_.stop_requested() ? static_cast<float>(s) : 0.0f;
    extra[kPreemptSlot] = c_.preempt_requested() ? static_cast<float>(s) : 0.0f;
    stats_.mutable_grad().copy_(host_stats_);
    buckets_->AllreduceGradients(*c_.comm, c_.timeout, ReduceOp::kSum);
    host_stats_.copy_(stats_.grad());  // the one host read of the step's shared values
    r.stop = extra[kStopSlot] > 0;
    r.preempt = extra[kPreemptSlot] > 0;
    r.loss = extra[kLossSlot];
    r.elapsed = extra[kElapsedSlot];
    r.gns_sq_small = static_cast<double>(extra[kLocalSqSlot]);
    r.facts.wait_seconds = SecondsSince(in.computed);
    return r;
  }

  bool HoldsGradients() const override { return buckets_ != nullptr; }
  double GradientScale() const override { return grad_scale_; }
  bool MeasuresNoise() const override { return true; }

 private:
  SyncContext c_;
  std::unique_ptr<GradientBuckets> buckets_;  // K > 1
  // 1/K with buckets_ (the loss carries the average's 1/K, so the buckets are summed: no
  // division pass over them), else 1. The shared slots carry the same factor.
  double grad_scale_ = 1.0;
  torch::Tensor stats_;       // K > 1: the shared values as a "parameter" whose grad is bucketed
  torch::Tensor host_stats_;  // the same slots on the host (written, then read back)
};

// comm.sync "lag": step t applies step t-1's averaged gradient.
class LagExchange : public StepExchange {
 public:
  explicit LagExchange(SyncContext c)
      : c_(std::move(c)), lagged_(c_.param_count, c_.comm, c_.timeout, c_.options) {}

  ExchangeResult Exchange(const StepInputs& in) override {
    ExchangeResult r;
    shared_.Fill(c_, in.local_loss, in.start, in.computed);
    if (c_.world > 1) c_.comm->Allreduce(shared_.tensor(), ReduceOp::kAvg)->Wait(c_.timeout);
    double waited = 0;
    const torch::Tensor previous = lagged_.Exchange(in.grads, &waited);
    r.facts.wait_seconds = SecondsSince(in.computed);
    r.apply = previous.defined();
    if (r.apply) in.grads.copy_(previous);
    r.facts.staleness = r.apply ? 1 : 0;
    r.facts.effective_batch = r.apply ? in.batch : 0;
    shared_.Read(c_.world, &r);
    return r;
  }

  torch::Tensor Drain() override {
    double waited = 0;
    return lagged_.Drain(&waited);
  }
  void Settle() override { lagged_.Settle(); }
  void Save(NamedTensors* tensors, nlohmann::json* /*state*/) override {
    if (torch::Tensor inflight = lagged_.Settle(); inflight.defined()) {
      tensors->emplace_back("lag.in_flight", inflight);
    }
  }
  void Restore(const CheckpointFile& file) override {
    if (file.Has("lag.in_flight")) lagged_.Restore(file.Tensor("lag.in_flight"));
  }

 private:
  SyncContext c_;
  LaggedGradient lagged_;
  SharedValues shared_;
};

// comm.sync "local_sgd": every rank steps alone; parameters and optimizer state averaged at every
// H-th step, every evaluation and the last step.
class LocalSgdExchange : public StepExchange {
 public:
  explicit LocalSgdExchange(SyncContext c) : c_(std::move(c)) {
    if (c_.world > 1) average_ = std::make_unique<ParameterAverage>(*c_.comm, c_.timeout);
  }

  ExchangeResult Exchange(const StepInputs& in) override {
    ExchangeResult r;  // every rank steps with its own gradient
    r.loss = in.local_loss;
    r.facts.effective_batch = in.batch;
    return r;
  }

  void AfterUpdate(const StepInputs& in, ExchangeResult* r) override {
    const bool sync_point = in.step % c_.sync_every == 0 || in.step == in.total_steps ||
                            (c_.eval_every_steps > 0 && in.step % c_.eval_every_steps == 0);
    r->facts.effective_batch = c_.local_batch_size;
    r->facts.staleness = static_cast<double>(in.step - 1 - last_average_);
    r->agreed = sync_point;
    if (!sync_point) return;
    shared_.Fill(c_, in.local_loss, in.start, in.updated);
    if (average_) {
      r->facts.wait_seconds =
          average_->Run(c_.params, OptimizerStateTensors(*in.optimizer, c_.params), shared_.tensor());
    }
    r->comm_seconds = r->facts.wait_seconds;  // the average's (0 on one rank)
    last_average_ = in.step;
    shared_.Read(c_.world, r);
  }

  void Save(NamedTensors* /*tensors*/, nlohmann::json* state) override {
    (*state)["last_average"] = last_average_;
  }
  void Restore(const CheckpointFile& file) override {
    last_average_ = file.header.at("state").value("last_average", int64_t{0});
  }

 private:
  SyncContext c_;
  std::unique_ptr<ParameterAverage> average_;  // K > 1
  SharedValues shared_;
  int64_t last_average_ = 0;  // the step of the last average (0: none yet)
};

}  // namespace

std::unique_ptr<StepExchange> MakeAllreduceExchange(SyncContext context) {
  return std::make_unique<AllreduceExchange>(std::move(context));
}

std::unique_ptr<StepExchange> MakeLagExchange(SyncContext context) {
  return std::make_unique<LagExchange>(std::move(context));
}

std::unique_ptr<StepExchange> MakeLocalSgdExchange(SyncContext context) {
  return std::make_unique<LocalSgdExchange>(std::move(context));
}

}  // namespace batchlab::runner
