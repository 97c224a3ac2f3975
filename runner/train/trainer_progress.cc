// What the trainer's run has seen and decides (see trainer.h): the held-out evaluation, the
// target, divergence, stop and budget decisions every rank takes alike, the orchestrator's stop
// and prune_at files, and the start, eval and end lines (docs/protocol.md).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "base/elapsed.h"
#include "base/run_protocol.h"
#include "base/sync_mode.h"
#include "runner/config/device.h"
#include "runner/train/trainer.h"

namespace batchlab::runner {
namespace {

using Clock = std::chrono::steady_clock;
namespace F = torch::nn::functional;

constexpr double kStopCheckSeconds = 0.1;  // rank 0 looks for the stop file at most this often
constexpr int64_t kEvalChunk = 2048;


std::string HostName() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

nlohmann::ordered_json NullableNumber(bool has, double value) {
  return has ? nlohmann::ordered_json(value) : nlohmann::ordered_json(nullptr);
}

}  // namespace

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
  if (SecondsBetween(last_stop_check_, now) < kStopCheckSeconds) return false;
  last_stop_check_ = now;
  return access(stop_file_.c_str(), F_OK) == 0;
}

double Trainer::ElapsedSeconds() const { return SecondsBetween(start_, Clock::now()); }

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

void Trainer::WriteStart() {
  if (metrics_ == nullptr) return;
  nlohmann::ordered_json line = {{"kind", protocol::kLineStart},
                                 {"time", UnixSeconds()},
                                 {"world_size", config_.world_size},
                                 {"batch_size", config_.batch_size},
                                 {"local_batch_size", config_.local_batch_size},
                                 {"accumulation", config_.accumulation},
                                 {"parameters", param_count_},
                                 {"host", HostName()},
                                 {"total_steps", total_steps_},
                                 {"steps_per_epoch", sampler_->steps_per_epoch()},
                                 {"backend", comm_ != nullptr ? comm_->backend() : "none"},
                                 {"sync", SyncModeName(config_.comm.sync)},
                                 {"device", DeviceName(device_)},
                                 {"precision", PrecisionName(precision_)}};
  if (const run_values::BatchSchedule& schedule = length_.schedule; !schedule.constant()) {
    // batch_size is the first batch; step lines carry each step's
    line["batch_schedule"] = {{"at_samples", schedule.at_samples},
                              {"batch_sizes", schedule.batch_sizes}};
  }
  if (const int64_t tokens = model_->TokensPerSample(); tokens > 0) {  // a language model
    line["tokens_per_step"] = config_.batch_size * tokens;
    line["flops_per_step"] =
        model_->TrainingFlopsPerToken() * static_cast<double>(config_.batch_size * tokens);
  }
  metrics_->Write(line);
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
  const double epoch = InfoOf(config_.comm.sync).one_worker_steps
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

}  // namespace batchlab::runner
