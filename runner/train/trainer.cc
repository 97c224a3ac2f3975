// The trainer of one rank (see trainer.h for the shape of a step): the constructor, which makes
// the sync mode's parts and the run's length, the loop, and the collective step.
#include "base/elapsed.h"
#include "runner/train/trainer.h"

#include <algorithm>
#include <cstdlib>

#include <fmt/core.h>

#include "base/run_protocol.h"
#include "base/run_values.h"
#include "base/sync_mode.h"
#include "runner/config/device.h"
#include "runner/config/runner_error.h"
#include "runner/data/synthetic_linear.h"
#include "runner/optim/optimizer_factory.h"
#include "runner/sync/flat_tensors.h"
#include "runner/sync/step_exchange.h"
#include "runner/sync/sync_mode_parts.h"
#include "runner/train/preempt_signal.h"

namespace batchlab::runner {
namespace {

using Clock = std::chrono::steady_clock;

// The marks of a step's StepClock: before the data, after it, after compute, after the
// exchange, after the optimizer, at the end.
enum Mark { kBegin, kData, kCompute, kComm, kOptim, kEnd, kMarks };


}  // namespace

Trainer::Trainer(const RunConfig& config, const Dataset& data, Communicator* comm,
                 MetricsWriter* metrics, int rank)
    : config_(config),
      data_(data),
      comm_(comm),
      metrics_(metrics),
      rank_(rank),
      world_(static_cast<int>(config.world_size)) {
  if (world_ > 1 && comm_ == nullptr) {
    throw RunnerError(RunnerError::Kind::kInternal, "Trainer: world_size > 1 needs a communicator");
  }
  torch::manual_seed(config_.seed);  // identical initialization on every rank
  const SyncModeInfo& mode = InfoOf(config_.comm.sync);  // what the mode can do
  const SyncModeParts& parts = PartsOf(config_.comm.sync);   // how it does it
  // The parameter server exchanges host memory by hand (trainer_ps.cc): its ranks stay on the CPU.
  if (!mode.parameter_server) device_ = TrainingDevice(config_);
  model_ = MakeModel(config_.model, data_);  // initialized on the CPU: the same on every device
  if (device_.is_cuda()) model_->to(device_);
  params_ = model_->parameters();
  param_count_ = model_->ParameterCount();
  precision_ = ParsePrecision(config_.precision);
  if (precision_ == Precision::kFp16) {
    if (!device_.is_cuda()) {
      throw BadConfig(
          "precision: \"fp16\" needs a CUDA device and this rank trains on the CPU (docs/gpu.md); "
          "use \"fp32\" or \"bf16\"");
    }
    // BATCHLAB_LOSS_SCALE: the first scale (default 2^16), for the GPU checks that make it
    // overflow on purpose (scripts/gpu/runner_vs_pytorch.py).
    LossScalerOptions scaling;
    if (const char* first = std::getenv("BATCHLAB_LOSS_SCALE"); first != nullptr && *first) {
      scaling.initial_scale = std::atof(first);
    }
    scaler_ = std::make_unique<DynamicLossScaler>(scaling);
  }
  clock_ = std::make_unique<StepClock>(device_, kMarks);
  const torch::TensorOptions on_device = torch::TensorOptions().device(device_);
  const auto timeout = std::chrono::seconds(config_.comm.timeout_seconds);
  if (parts.exchange != nullptr) {  // the collective modes: the step's exchange, made once
    SyncContext context;
    context.comm = comm_;
    context.world = world_;
    context.timeout = timeout;
    context.params = params_;
    context.param_count = param_count_;
    context.options = on_device;
    context.bucket_mb = config_.comm.bucket_mb;
    context.sync_every = config_.comm.sync_every;
    context.eval_every_steps = config_.eval_every_steps;
    context.local_batch_size = config_.local_batch_size;
    context.stop_requested = [this] { return StopRequested(); };
    context.preempt_requested = [this] { return PreemptRequested(); };
    context.grad_squared_norm = [this] { return GradSquaredNorm(); };
    exchange_ = parts.exchange(std::move(context));  // allreduce K > 1: rank 0's weights
    grad_scale_ = exchange_->GradientScale();
    loop_ = &Trainer::RunCollective;
  } else {
    loop_ = rank_ == 0 ? &Trainer::RunServer : &Trainer::RunWorker;
  }
  if (exchange_ == nullptr || !exchange_->HoldsGradients()) {
    BindGradientsToFlatBuffer();
    if (world_ > 1) {  // every rank starts from rank 0's weights
      torch::Tensor flat = FlatParameters();
      comm_->Broadcast(flat, 0)->Wait(timeout);
      UnpackFrom(flat, params_);
    }
  }

  // The run's length, as the orchestrator computes it (base/run_values.h). async_ps: rank 0
  // serves, ranks 1..K-1 read the data as K-1 ranks would (so one worker reads it as a one-rank
  // run does), and a step is one worker's update of its local batch.
  run_values::RunShape shape;
  shape.train_samples = data_.train_size();
  shape.world = world_;
  shape.batch = config_.batch_size;
  shape.local_batch = config_.local_batch_size;
  shape.one_worker_steps = mode.one_worker_steps;
  shape.schedule = config_.batch_schedule;
  shape.budget = config_.budget;
  length_ = run_values::LengthOf(shape);
  const int shards = static_cast<int>(length_.data_ranks);
  const int shard_rank = mode.one_worker_steps ? std::max(rank_ - 1, 0) : rank_;
  sampler_ = std::make_unique<ShardSampler>(data_.train_size(), config_.seed, shard_rank, shards,
                                            config_.local_batch_size);
  const run_values::BatchSchedule& schedule = length_.schedule;
  for (size_t i = 0; i < schedule.batch_sizes.size(); ++i) {
    if (schedule.batch_sizes[i] / world_ * shards > sampler_->epoch_rows()) {
      throw BadConfig(fmt::format(
          "batch_schedule.batch_sizes[{}]: a batch of {} is larger than the {} training "
          "samples; use a smaller batch size",
          i, schedule.batch_sizes[i] / world_ * shards, sampler_->epoch_rows()));
    }
  }
  batch_ = config_.batch_size;
  local_batch_ = config_.local_batch_size;
  straggler_ = std::make_unique<Straggler>(config_.comm.straggler, config_.seed, rank_, world_);
  const int64_t spe = length_.steps_per_epoch;
  total_steps_ = length_.total_steps;

  auto lr_for = [&](int64_t batch) {
    return std::make_unique<run_values::LrSchedule>(
        OrBadConfig(run_values::LrSchedule::Make(config_.lr, batch, total_steps_, spe)));
  };
  lr_ = lr_for(config_.batch_size);
  for (int64_t batch : schedule.batch_sizes) {
    if (batch != config_.batch_size && lr_by_batch_.count(batch) == 0) {
      lr_by_batch_[batch] = lr_for(batch);
    }
  }
  optimizer_ = MakeOptimizer(config_.optimizer, model_->named_parameters(), lr_->At(0));

  PlaceData();
  SizeBatchBuffers(config_.local_batch_size);
  prev_grad_ = torch::zeros({param_count_}, on_device);
  scratch_ = torch::zeros({param_count_}, on_device);
}

int64_t Trainer::SamplesAfter(int64_t steps) const { return length_.SamplesAfter(steps); }

void Trainer::UseBatchOfStep(int64_t step) {
  if (length_.schedule.constant()) return;
  const int64_t batch = length_.schedule.At(step).batch;
  if (batch == batch_) return;
  batch_ = batch;
  local_batch_ = batch / world_;
  sampler_->set_local_batch(local_batch_);
  SizeBatchBuffers(local_batch_);
}

double Trainer::LrAt(int64_t step) const {
  const run_values::BatchSchedule& schedule = length_.schedule;
  const int64_t batch = schedule.constant() ? config_.batch_size : schedule.At(step).batch;
  const auto other = lr_by_batch_.find(batch);
  return (other == lr_by_batch_.end() ? *lr_ : *other->second).At(step - 1);
}

Trainer::~Trainer() = default;

Outcome Trainer::Run() {
  PreemptWindow preempt_window;  // SIGUSR2/SIGTERM now mean: checkpoint and exit 7
  start_ = Clock::now();
  MaybeResume();  // a new attempt: from the newest valid checkpoint of the earlier ones
  if (resumed_step_ == 0) MaybeStartBranch();  // a branch run: from the trunk's checkpoint
  WriteStart();
  return (this->*loop_)();  // the mode's loop, picked by the constructor
}

Outcome Trainer::RunCollective() {
  Progress& p = progress_;
  StepClock& clock = *clock_;
  while (total_steps_ == 0 || step_ < total_steps_) {
    ++step_;
    UseBatchOfStep(step_);  // the batch schedule's batch of this step
    StepInputs in;
    in.step = step_;
    in.total_steps = total_steps_;
    in.batch = batch_;
    in.measure = exchange_->MeasuresNoise() && config_.gns_every_steps > 0 &&
                 step_ % config_.gns_every_steps == 0;
    in.grads = grads_;
    in.optimizer = optimizer_.get();
    in.start = start_;

    clock.Mark(kBegin);
    GatherBatch();                                                   // data
    clock.Mark(kData);
    in.local_loss = ComputeGradients(in.measure && world_ == 1);     // forward, backward
    straggler_->MaybeDelay(step_);
    clock.Mark(kCompute);
    in.computed = clock.HostTime(kCompute);
    in.loss_scale = scaler_ ? scaler_->scale() : 1.0;  // this step's (fp16)
    ExchangeResult r = exchange_->Exchange(in);                      // exchange
    clock.Mark(kComm);
    const bool finite = UnscaleGradients(&r);
    const nlohmann::ordered_json noise = NoiseLine(in.measure && finite, r);
    const double lr = LrAt(step_);
    Update(lr, r.apply);                                             // update
    clock.Mark(kOptim);
    in.updated = clock.HostTime(kOptim);
    exchange_->AfterUpdate(in, &r);                                  // local SGD: the average
    clock.Mark(kEnd);
    const Clock::time_point end = clock.HostTime(kEnd);
    // The seconds all ranks share; on one rank its own clock (local SGD between averages: the
    // last shared ones).
    p.elapsed = r.elapsed.value_or(world_ > 1 ? p.elapsed : SecondsBetween(start_, end));
    losses_.push_back(r.loss);
    WriteStepLine(in, r, noise, lr);

    // Every decision uses values all ranks share, so all ranks agree (local_sgd: only at the
    // steps where they average).
    if (!r.agreed) continue;
    if (Decide(r.loss, r.stop, /*collective_eval=*/true)) break;
    if (r.preempt) {  // every rank saw it after this step: save, and leave for a new attempt
      if (CheckpointsEnabled()) {
        SaveCheckpoint();
      } else {
        exchange_->Settle();  // no collective left open
      }
      return Outcome::kPreempted;
    }
    if (step_ != total_steps_ && CheckpointDue()) SaveCheckpoint();  // not at the very end
  }
  ApplyDrained();
  return Finish(/*collective_eval=*/true);
}

bool Trainer::UnscaleGradients(ExchangeResult* r) {
  // fp16: the gradient this step applies, unscaled; an Inf/NaN in it skips the step (every rank
  // holds the same gradient after allreduce, so all skip together; local SGD ranks decide alone
  // until they average).
  if (!scaler_ || !r->apply) return true;
  r->apply = scaler_->UnscaleAndCheck(GradientTensors());
  return r->apply;
}

nlohmann::ordered_json Trainer::NoiseLine(bool measure, const ExchangeResult& r) {
  nlohmann::ordered_json line = nlohmann::ordered_json::object();
  if (metrics_ == nullptr || !measure || (world_ == 1 && gns_b_small_ == 0)) return line;
  // K > 1: the local gradient (its |g|^2 averaged over ranks in the exchange) against the
  // averaged one; one rank: micro-batch against accumulated gradient.
  line[protocol::kMetricGnsBSmall] = world_ > 1 ? local_batch_ : gns_b_small_;
  line[protocol::kMetricGnsBBig] = batch_;
  line[protocol::kMetricGnsSqSmall] = world_ > 1 ? r.gns_sq_small : gns_sq_small_;
  line[protocol::kMetricGnsSqBig] = GradSquaredNorm();
  if (data_.truth && config_.model.name == "logreg") {
    const auto named = model_->named_parameters();
    const torch::Tensor* bias = named.find("linear.bias");
    NoiseScaleTruth truth = TrueNoiseScale(
        *data_.truth, named["linear.weight"].to(torch::kCPU),
        bias != nullptr ? std::optional<torch::Tensor>(bias->to(torch::kCPU)) : std::nullopt);
    line["gns_true_sq"] = truth.grad_sq;
    line["gns_true_trace"] = truth.trace_sigma;
    line["gns_true_b_simple"] = truth.b_simple;
  }
  return line;
}

void Trainer::Update(double lr, bool apply) {
  if (apply) {
    SetLearningRate(*optimizer_, lr);
    optimizer_->step();
  }
  if (scaler_) scaler_->Update();
}

void Trainer::WriteStepLine(const StepInputs& in, const ExchangeResult& r,
                            const nlohmann::ordered_json& noise, double lr) {
  if (metrics_ == nullptr) return;
  StepClock& clock = *clock_;
  nlohmann::ordered_json line = StepLine(r.loss, r.facts);
  line.update(noise);
  line["lr"] = lr;
  line[protocol::kMetricStepSeconds] = clock.Seconds(kBegin, kEnd);
  line["data_seconds"] = clock.Seconds(kBegin, kData);
  line["compute_seconds"] = clock.Seconds(kData, kCompute);
  line[protocol::kMetricCommSeconds] = r.comm_seconds.value_or(clock.Seconds(kCompute, kComm));
  line["optim_seconds"] = clock.Seconds(kComm, kOptim);
  if (scaler_) {
    line["loss_scale"] = in.loss_scale;
    line["skipped_steps"] = scaler_->skipped_steps();
  }
  metrics_->Write(line);
}

void Trainer::ApplyDrained() {
  // lag: the last gradient in flight, applied when the run ran its budget to the end.
  const Progress& p = progress_;
  const torch::Tensor last = exchange_->Drain();
  if (last.defined() && !p.diverged && !p.reached && !p.stopped) {
    grads_.copy_(last);
    SetLearningRate(*optimizer_, lr_->At(step_ - 1));
    optimizer_->step();
    progress_.last_eval_step = -1;  // the parameters changed: evaluate them
  }
}

}  // namespace batchlab::runner
