// The training loop of one rank (see trainer.h for the shape of a step).
#include "runner/train/trainer.h"
#include "base/run_protocol.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <fstream>
#include <limits>

#include <fmt/core.h>

#include "base/run_values.h"
#include "runner/config/device.h"
#include "runner/data/synthetic_linear.h"
#include "runner/comm/gradient_buckets.h"
#include "runner/optim/optimizer_factory.h"
#include "runner/train/preempt_signal.h"
#include "runner/config/runner_error.h"
#include "runner/sync/flat_tensors.h"
#include "runner/sync/step_exchange.h"

namespace batchlab::runner {
namespace {

using Clock = std::chrono::steady_clock;
namespace F = torch::nn::functional;

// The marks of a step's StepClock: before the data, after it, after compute, after the
// exchange, after the optimizer, at the end.
enum Mark { kBegin, kData, kCompute, kComm, kOptim, kEnd, kMarks };
constexpr double kStopCheckSeconds = 0.1;  // rank 0 looks for the stop file at most this often
constexpr int64_t kEvalChunk = 2048;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::string HostName() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

nlohmann::ordered_json NullableNumber(bool has, double value) {
  return has ? nlohmann::ordered_json(value) : nlohmann::ordered_json(nullptr);
}

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
  sync_ = ParseSyncMode(config_.comm.sync);
  // The parameter server exchanges host memory by hand (trainer_ps.cc): its ranks stay on the CPU.
  if (!IsParameterServer(sync_)) device_ = TrainingDevice(config_);
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
  if (!IsParameterServer(sync_)) {  // the collective modes: the step's exchange, made once
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
    exchange_ = MakeStepExchange(sync_, std::move(context));  // allreduce K > 1: rank 0's weights
    grad_scale_ = exchange_->GradientScale();
  }
  if (exchange_ == nullptr || !exchange_->HoldsGradients()) {
    BindGradientsToFlatBuffer();
    if (world_ > 1) {  // every rank starts from rank 0's weights
      torch::Tensor flat = FlatParameters();
      comm_->Broadcast(flat, 0)->Wait(timeout);
      UnpackFrom(flat, params_);
    }
  }

  // async_ps: rank 0 serves, ranks 1..K-1 read the data as K-1 ranks would (so one worker reads
  // it as a one-rank run does), and a step is one worker's update of its local batch.
  const bool async_ps = sync_ == SyncMode::kAsyncPs;
  const int shard_rank = async_ps ? std::max(rank_ - 1, 0) : rank_;
  const int shards = async_ps ? world_ - 1 : world_;
  sampler_ = std::make_unique<ShardSampler>(data_.train_size(), config_.seed, shard_rank, shards,
                                            config_.local_batch_size);
  samples_per_step_ = async_ps ? config_.local_batch_size : config_.batch_size;
  schedule_ = config_.batch_schedule;
  schedule_.first_batch = config_.batch_size;
  for (size_t i = 0; i < schedule_.batch_sizes.size(); ++i) {
    if (schedule_.batch_sizes[i] / world_ * shards > sampler_->epoch_rows()) {
      throw BadConfig(fmt::format(
          "batch_schedule.batch_sizes[{}]: a batch of {} is larger than the {} training "
          "samples; use a smaller batch size",
          i, schedule_.batch_sizes[i] / world_ * shards, sampler_->epoch_rows()));
    }
  }
  batch_ = config_.batch_size;
  local_batch_ = config_.local_batch_size;
  straggler_ = std::make_unique<Straggler>(config_.comm.straggler, config_.seed, rank_, world_);
  const int64_t spe = async_ps ? sampler_->steps_per_epoch() * shards : sampler_->steps_per_epoch();
  const BudgetConfig& b = config_.budget;
  const run_values::Budget budget{b.epochs, b.steps, b.samples, b.seconds};
  total_steps_ = schedule_.constant()
                     ? run_values::TotalSteps(budget, samples_per_step_, spe)
                     : run_values::TotalSteps(budget, schedule_, sampler_->epoch_rows());

  auto lr_for = [&](int64_t batch) {
    return std::make_unique<run_values::LrSchedule>(
        OrBadConfig(run_values::LrSchedule::Make(config_.lr, batch, total_steps_, spe)));
  };
  lr_ = lr_for(config_.batch_size);
  for (int64_t batch : schedule_.batch_sizes) {
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

void Trainer::SizeBatchBuffers(int64_t local) {
  std::vector<int64_t> x_shape = {local, data_.features()};
  std::vector<int64_t> y_shape = data_.train_y.sizes().vec();
  y_shape[0] = local;
  batch_x_ = torch::empty(x_shape, data_.train_x.options().device(device_));
  batch_y_ = torch::empty(y_shape, data_.train_y.options().device(device_));
  // Gathered where the training set lives: on the device, or (too large for it) on the host, in
  // pinned memory, then copied without blocking.
  const bool pinned = device_.is_cuda() && !data_on_device_;
  const torch::Device gather_device = data_on_device_ ? device_ : torch::Device(torch::kCPU);
  if (data_.train_pixels.defined()) {
    batch_pixels_ = torch::empty(x_shape, torch::TensorOptions(torch::kUInt8)
                                              .device(gather_device)
                                              .pinned_memory(pinned));
  }
  if (pinned) {
    host_x_ = torch::empty(x_shape, data_.train_x.options().pinned_memory(true));
    host_y_ = torch::empty(y_shape, data_.train_y.options().pinned_memory(true));
  }
  if (data_on_device_) {
    // A step's row indices go up through a pinned buffer without blocking (a pageable copy
    // would wait for the previous step's kernels).
    rows_host_ = torch::empty({local}, torch::TensorOptions(torch::kInt64).pinned_memory(true));
    rows_device_ = torch::empty({local}, torch::TensorOptions(torch::kInt64).device(device_));
  }
}

int64_t Trainer::SamplesAfter(int64_t steps) const {
  return sync_ == SyncMode::kAsyncPs ? steps * samples_per_step_ : schedule_.SamplesAfter(steps);
}

void Trainer::UseBatchOfStep(int64_t step) {
  if (schedule_.constant()) return;
  const int64_t batch = schedule_.At(step).batch;
  if (batch == batch_) return;
  batch_ = batch;
  local_batch_ = batch / world_;
  sampler_->set_local_batch(local_batch_);
  SizeBatchBuffers(local_batch_);
}

double Trainer::LrAt(int64_t step) const {
  const int64_t batch = schedule_.constant() ? config_.batch_size : schedule_.At(step).batch;
  const auto other = lr_by_batch_.find(batch);
  return (other == lr_by_batch_.end() ? *lr_ : *other->second).At(step - 1);
}

void Trainer::PlaceData() {
  train_x_ = data_.train_x;
  train_y_ = data_.train_y;
  train_pixels_ = data_.train_pixels;
  test_x_ = data_.test_x;
  test_y_ = data_.test_y;
  if (!device_.is_cuda()) return;
  // The training rows as the trainer gathers them (the bytes of an image set, else the floats).
  const torch::Tensor& rows = train_pixels_.defined() ? train_pixels_ : train_x_;
  int64_t bytes = 0;
  const std::initializer_list<const torch::Tensor*> resident = {&rows, &train_y_, &test_x_,
                                                                &test_y_};
  for (const torch::Tensor* t : resident) {
    bytes += t->numel() * static_cast<int64_t>(t->element_size());
  }
  data_on_device_ = FitsOnDevice(device_, bytes);
  if (data_on_device_) {  // copied once; every step gathers on the device
    if (train_pixels_.defined()) {
      train_pixels_ = train_pixels_.to(device_);
    } else {
      train_x_ = train_x_.to(device_);
    }
    train_y_ = train_y_.to(device_);
    test_x_ = test_x_.to(device_);  // read in chunks by every evaluation
    test_y_ = test_y_.to(device_);
  }
}

std::vector<torch::Tensor> Trainer::GradientTensors() const {
  if (grads_.defined()) return {grads_};
  std::vector<torch::Tensor> grads;
  grads.reserve(params_.size());
  for (const auto& p : params_) grads.push_back(p.grad());
  return grads;
}

Trainer::~Trainer() = default;

void Trainer::BindGradientsToFlatBuffer() {
  // Autograd accumulates into an existing .grad in place, so after backward the gradients sit
  // in grads_ already flat: norms and micro-batch differences need no gathering.
  grads_ = torch::zeros({param_count_}, torch::TensorOptions().device(device_));
  int64_t offset = 0;
  for (auto& p : params_) {
    p.mutable_grad() =
        grads_.narrow(0, offset, p.numel()).as_strided(p.sizes(), GradientStrides(p));
    offset += p.numel();
  }
}

void Trainer::ZeroGradients() {
  if (grads_.defined()) {
    grads_.zero_();
    return;
  }
  for (auto& p : params_) p.mutable_grad().zero_();  // in place: the bucket views stay
}

double Trainer::GradSquaredNorm() {
  if (grads_.defined()) return grads_.dot(grads_).item<double>();
  double sum = 0;
  for (auto& p : params_) {
    const torch::Tensor g = p.grad().reshape({-1});
    sum += g.dot(g).item<double>();
  }
  return sum;
}

torch::Tensor Trainer::FlatParameters() const {
  std::vector<torch::Tensor> parts;
  parts.reserve(params_.size());
  for (const auto& p : params_) parts.push_back(p.detach().reshape({-1}));
  return torch::cat(parts).to(torch::kCPU).contiguous();
}

void Trainer::Allreduce(torch::Tensor& tensor, ReduceOp op) {
  comm_->Allreduce(tensor, op)->Wait(std::chrono::seconds(config_.comm.timeout_seconds));
}

void Trainer::set_stop_file(std::string path) {
  stop_file_ = std::move(path);
  prune_file_ = protocol::PruneAtPath(std::filesystem::path(stop_file_).parent_path().string());
}

void Trainer::CheckPruneBound() {
  if (rank_ != 0 || prune_file_.empty() || prune_bound_passed_) return;
  std::ifstream in(prune_file_);
  if (!in) return;
  const nlohmann::json bound = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  const auto from = bound.is_object() ? bound.find("stop_from_step") : bound.end();
  if (from == bound.end() || !from->is_number_integer()) return;  // half-written or foreign
  prune_bound_passed_ = step_ + 1 >= from->get<int64_t>();        // the bound of this evaluation
}

bool Trainer::StopRequested() {
  if (rank_ != 0 || stop_file_.empty()) return false;
  if (prune_bound_passed_) return true;
  const Clock::time_point now = Clock::now();
  if (Seconds(last_stop_check_, now) < kStopCheckSeconds) return false;
  last_stop_check_ = now;
  return access(stop_file_.c_str(), F_OK) == 0;
}

double Trainer::ElapsedSeconds() const { return Seconds(start_, Clock::now()); }

torch::Tensor Trainer::Loss(const torch::Tensor& output, const torch::Tensor& target) {
  if (data_.classes > 0 && output.dim() > 2) {  // a language model: the mean over all tokens
    return F::cross_entropy(output.reshape({-1, output.size(-1)}), target.reshape({-1}));
  }
  if (data_.classes > 0) return F::cross_entropy(output, target);
  return 0.5 * F::mse_loss(output, target);
}

double Trainer::ComputeGradients(bool measure_micro) {
  const int64_t local = local_batch_;
  int64_t m = config_.accumulation;
  if (measure_micro && m == 1 && local >= 2 && local % 2 == 0) m = 2;  // two half-batches
  const int64_t mb = local / m;
  const bool measured = measure_micro && m > 1;
  const bool autocast = precision_ != Precision::kFp32;
  const double loss_scale = scaler_ ? scaler_->scale() : 1.0;  // fp16: backward of S * loss

  ZeroGradients();
  if (measured) prev_grad_.zero_();
  // Summed where the loss is, in double as the host did it: no host read per micro-batch.
  torch::Tensor loss_sum = torch::zeros({}, torch::TensorOptions(torch::kFloat64).device(device_));
  double sq_sum = 0;
  for (int64_t i = 0; i < m; ++i) {
    torch::Tensor xb = m == 1 ? batch_x_ : batch_x_.narrow(0, i * mb, mb);
    torch::Tensor yb = m == 1 ? batch_y_ : batch_y_.narrow(0, i * mb, mb);
    torch::Tensor loss;
    {
      AutocastGuard guard(precision_, device_.is_cuda());
      torch::Tensor out = model_->forward(xb);
      loss = Loss(autocast ? out.to(torch::kFloat32) : out, yb);
    }
    // The sum of micro-steps is the mean, and (with buckets) the sum over ranks too.
    const double scale = grad_scale_ / static_cast<double>(m);
    if (scaler_) {
      (loss * (scale * loss_scale)).backward();
    } else if (scale == 1.0) {
      loss.backward();
    } else {
      (loss * scale).backward();
    }
    loss_sum.add_(loss.detach().to(torch::kFloat64));
    if (measured) {
      // This micro-batch's gradient is m * (grads after - grads before).
      torch::sub_out(scratch_, grads_, prev_grad_);
      sq_sum += scratch_.dot(scratch_).item<double>() * static_cast<double>(m * m);
      prev_grad_.copy_(grads_);
    }
  }
  gns_b_small_ = measured ? mb : 0;
  // Of the unscaled gradients (fp16: the micro-batch gradients carry S).
  gns_sq_small_ = measured ? sq_sum / static_cast<double>(m) / (loss_scale * loss_scale) : 0;
  return loss_sum.item<double>() / static_cast<double>(m);
}

EvalResult Trainer::Evaluate(bool collective) {
  torch::NoGradGuard no_grad;
  const int64_t n = config_.eval_subset > 0 ? std::min(config_.eval_subset, data_.test_size())
                                            : data_.test_size();
  const int64_t share = collective ? world_ : 1, index = collective ? rank_ : 0;
  const int64_t begin = n * index / share, end = n * (index + 1) / share;
  double loss_sum = 0, correct = 0;
  for (int64_t at = begin; at < end; at += kEvalChunk) {
    const int64_t rows = std::min(kEvalChunk, end - at);
    torch::Tensor x = test_x_.narrow(0, at, rows).to(device_);  // no copy when it is there
    torch::Tensor y = test_y_.narrow(0, at, rows).to(device_);
    torch::Tensor out;
    {
      AutocastGuard autocast(precision_, device_.is_cuda());
      out = model_->forward(x).to(torch::kFloat32);
    }
    if (data_.classes > 0) {
      if (out.dim() > 2) {  // a language model: every token is a prediction
        out = out.reshape({-1, out.size(-1)});
        y = y.reshape({-1});
      }
      loss_sum += F::cross_entropy(out, y, F::CrossEntropyFuncOptions().reduction(torch::kSum))
                      .item<double>();
      correct += out.argmax(1).eq(y).sum().item<double>();
    } else {
      loss_sum += 0.5 * F::mse_loss(out, y, F::MSELossFuncOptions(torch::kSum)).item<double>();
    }
  }
  torch::Tensor sums = torch::tensor({static_cast<float>(loss_sum), static_cast<float>(correct)});
  if (collective && world_ > 1) Allreduce(sums, ReduceOp::kSum);
  EvalResult r;
  const double per_row = data_.context > 0 ? static_cast<double>(data_.context) : 1.0;  // tokens
  r.loss = sums[0].item<double>() / (static_cast<double>(n) * per_row);
  r.accuracy = sums[1].item<double>() / (static_cast<double>(n) * per_row);
  return r;
}

bool Trainer::ParameterServerMode() const {
  return IsParameterServer(sync_);
}

void Trainer::WriteStart() {
  if (metrics_ == nullptr) return;
  nlohmann::ordered_json line = {{"kind", protocol::kLineStart},
                                 {"time", UnixTime()},
                                 {"world_size", config_.world_size},
                                 {"batch_size", config_.batch_size},
                                 {"local_batch_size", config_.local_batch_size},
                                 {"accumulation", config_.accumulation},
                                 {"parameters", param_count_},
                                 {"host", HostName()},
                                 {"total_steps", total_steps_},
                                 {"steps_per_epoch", sampler_->steps_per_epoch()},
                                 {"backend", comm_ != nullptr ? comm_->backend() : "none"},
                                 {"sync", config_.comm.sync},
                                 {"device", DeviceName(device_)},
                                 {"precision", PrecisionName(precision_)}};
  if (!schedule_.constant()) {  // batch_size is the first batch; step lines carry each step's
    line["batch_schedule"] = {{"at_samples", schedule_.at_samples},
                              {"batch_sizes", schedule_.batch_sizes}};
  }
  if (const int64_t tokens = model_->TokensPerSample(); tokens > 0) {  // a language model
    line["tokens_per_step"] = config_.batch_size * tokens;
    line["flops_per_step"] =
        model_->TrainingFlopsPerToken() * static_cast<double>(config_.batch_size * tokens);
  }
  metrics_->Write(line);
}

void Trainer::GatherBatch() {
  torch::Tensor rows = sampler_->Next();
  if (data_on_device_) {
    rows_host_.copy_(rows);  // the previous step's copy is done: its loss was read since
    rows_device_.copy_(rows_host_, /*non_blocking=*/true);
    rows = rows_device_;
  }
  if (host_x_.defined()) {  // a CUDA rank whose training set stayed on the host
    if (train_pixels_.defined()) {
      torch::index_select_out(batch_pixels_, train_pixels_, 0, rows);  // pinned
      PixelsToFloat(batch_pixels_.to(device_, /*non_blocking=*/true), batch_x_);
    } else {
      torch::index_select_out(host_x_, train_x_, 0, rows);
      batch_x_.copy_(host_x_, /*non_blocking=*/true);
    }
    torch::index_select_out(host_y_, train_y_, 0, rows);
    batch_y_.copy_(host_y_, /*non_blocking=*/true);
    return;
  }
  if (train_pixels_.defined()) {  // the same values, from a quarter of the memory
    torch::index_select_out(batch_pixels_, train_pixels_, 0, rows);
    PixelsToFloat(batch_pixels_, batch_x_);
  } else {
    torch::index_select_out(batch_x_, train_x_, 0, rows);
  }
  torch::index_select_out(batch_y_, train_y_, 0, rows);
}

void Trainer::RecordTarget(double value, double seconds) {
  Progress& p = progress_;
  if (config_.target && !p.reached && config_.target->Met(value)) {
    p.reached = true;
    p.target_step = step_;
    p.target_samples = SamplesAfter(step_);
    p.target_seconds = seconds;
  }
}

void Trainer::EvalAndLog(bool collective) {
  Progress& p = progress_;
  p.last_eval = Evaluate(collective);
  p.last_eval_step = step_;
  const double seconds = ElapsedSeconds();
  if (metrics_ != nullptr) {
    nlohmann::ordered_json line = {{"kind", protocol::kLineEval},
                                   {"step", step_},
                                   {"samples", SamplesAfter(step_)},
                                   {"seconds", seconds},
                                   {protocol::kMetricTestLoss, p.last_eval.loss}};
    if (data_.classes > 0) line[protocol::kMetricTestAccuracy] = p.last_eval.accuracy;
    if (data_.context > 0) line["bits_per_byte"] = p.last_eval.loss / std::log(2.0);  // text
    metrics_->Write(line);
  }
  const std::optional<TargetConfig>& target = config_.target;
  if (target && target->metric == protocol::kMetricTestAccuracy)
    RecordTarget(p.last_eval.accuracy, seconds);
  if (target && target->metric == protocol::kMetricTestLoss)
    RecordTarget(p.last_eval.loss, seconds);
  if (target && target->metric != protocol::kMetricLoss && !p.reached) CheckPruneBound();
}

bool Trainer::Decide(double loss, bool stop, bool collective_eval) {
  Progress& p = progress_;
  if (!p.have_initial_loss) {
    p.initial_loss = loss;
    p.have_initial_loss = true;
  }
  if (!std::isfinite(loss) || loss > config_.divergence_factor * p.initial_loss) {
    p.diverged = true;
    return true;
  }
  if (config_.target && config_.target->metric == protocol::kMetricLoss)
    RecordTarget(loss, p.elapsed);
  if (config_.eval_every_steps > 0 && step_ % config_.eval_every_steps == 0) {
    EvalAndLog(collective_eval);
  }
  if (p.reached) return true;
  if (stop) {
    p.stopped = true;  // the orchestrator pruned this run: end now, without a final evaluation
    return true;
  }
  return config_.budget.seconds > 0 && p.elapsed >= config_.budget.seconds;
}

nlohmann::ordered_json Trainer::StepLine(double loss, const SyncFacts& sync) const {
  const double epoch = sync_ == SyncMode::kAsyncPs
                           ? static_cast<double>(SamplesAfter(step_) / data_.train_size())
                           : static_cast<double>(sampler_->epoch());
  return {{"kind", protocol::kLineStep},    {"step", step_},
          {"samples", SamplesAfter(step_)}, {"epoch", static_cast<int64_t>(epoch)},
          {protocol::kMetricLoss, loss},    {"wait_seconds", sync.wait_seconds},
          {"staleness", sync.staleness},    {"effective_batch", sync.effective_batch}};
}

Outcome Trainer::CurrentOutcome() const {
  const Progress& p = progress_;
  if (p.diverged) return Outcome::kDiverged;
  if (p.reached) return Outcome::kTargetReached;
  if (p.stopped) return Outcome::kPruned;
  if (config_.target) return Outcome::kBudgetExhausted;
  return Outcome::kCompleted;
}

Outcome Trainer::Finish(bool collective_eval) {
  Progress& p = progress_;
  if (!p.diverged && !p.stopped && p.last_eval_step != step_) EvalAndLog(collective_eval);
  const Outcome outcome = CurrentOutcome();
  if (metrics_ != nullptr) {
    const bool have_eval = p.last_eval_step == step_;
    const bool classification = data_.classes > 0;
    metrics_->Write(
        {{"kind", protocol::kLineEnd},
         {"outcome", std::string(OutcomeName(outcome))},
         {"steps", step_},
         {"samples", SamplesAfter(step_)},
         {"seconds", ElapsedSeconds()},
         {"target_step", p.reached ? nlohmann::ordered_json(p.target_step) : nullptr},
         {"target_samples", p.reached ? nlohmann::ordered_json(p.target_samples) : nullptr},
         {"target_seconds", NullableNumber(p.reached, p.target_seconds)},
         {"final_loss", losses_.empty()
                            ? nlohmann::ordered_json(nullptr)
                            : NullableNumber(std::isfinite(losses_.back()), losses_.back())},
         {"final_test_loss", NullableNumber(have_eval, p.last_eval.loss)},
         {"final_test_accuracy",
          NullableNumber(have_eval && classification, p.last_eval.accuracy)}});
  }
  return outcome;
}

Outcome Trainer::Run() {
  PreemptWindow preempt_window;  // SIGUSR2/SIGTERM now mean: checkpoint and exit 7
  start_ = Clock::now();
  MaybeResume();  // a new attempt: from the newest valid checkpoint of the earlier ones
  if (resumed_step_ == 0) MaybeStartBranch();  // a branch run: from the trunk's checkpoint
  WriteStart();
  if (ParameterServerMode()) return rank_ == 0 ? RunServer() : RunWorker();
  return RunCollective();
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
    p.elapsed = r.elapsed.value_or(world_ > 1 ? p.elapsed : Seconds(start_, end));
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
