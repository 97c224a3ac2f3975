// Checkpoints of the training loop (docs/protocol.md, "Checkpoints"): what a rank saves after a
// step, and how a new attempt finds and restores the newest valid one of the earlier attempts.
//
// Each rank writes its own shard (checkpoints/step-<step>.rank-<r>.ckpt) after the same step, with
// no collective: the ranks' states differ (local SGD's parameters between averages, each rank's
// data cursor), and no rank waits for another's disk. A checkpoint is usable when every rank's
// shard of it loads; ranks agree on which one with one small allreduce per candidate at start.
//
// A shard holds everything the next step depends on: parameters and buffers, the optimizer's
// per-parameter state, this rank's data cursor and random generator, the step and seconds
// counters, the first loss (divergence), the last evaluation, the losses so far, the metrics seq,
// and the sync mode's state, which its StepExchange saves and restores (sync/step_exchange.h;
// lag: the averaged gradient in flight; local_sgd: the last average).
// The LR schedule is a function of the step and needs nothing of its own.
//
// Elastic resume (format 2, docs/protocol.md "Elastic resume"): a checkpoint written by K ranks
// goes on at K'. Parameters, buffers, the optimizer state and the data cursor are the same in
// every shard (the cursor is global: shard_sampler.h), so rank r' reads its own rank's shard when
// the checkpoint has one and rank r' mod K's otherwise. Random state: rank r' < K takes rank r''s
// generator; a rank the checkpoint had none for (r' >= K) seeds a new stream from (seed, r', step),
// one no other rank draws from. The built-in models draw nothing random while training, so the run
// at K' continues the K-rank run up to the reduction order; a model with dropout keeps
// independent masks per rank, as a run started at K' has. Modes whose ranks hold different
// states (local_sgd between averages, async_ps, backup) cannot re-shard: BadConfig naming nodes.
// A format-1 checkpoint (per-rank shards of the data) resumes at its own K only; its data cursor
// is rebuilt as the global order that reads the same rows (ShardSampler::GlobalOrderOfShards).
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/core.h>

#include "base/elapsed.h"
#include "base/sync_mode.h"
#include "runner/optim/lamb.h"
#include "runner/optim/lars.h"
#include "runner/optim/optimizer_factory.h"
#include "runner/optim/optimizer_state_io.h"
#include "runner/optim/optimizer_state_key.h"
#include "runner/train/preempt_signal.h"
#include "runner/config/runner_error.h"
#include "runner/train/trainer.h"

namespace batchlab::runner {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

// The generator stream of a rank a re-sharded checkpoint had no generator for.
constexpr uint64_t kElasticStreamSalt = 0xe1a5;


void SaveOptimizerState(torch::optim::Optimizer& optimizer, const std::vector<torch::Tensor>& params,
                        NamedTensors* tensors, json* entries) {
  auto& state = optimizer.state();
  for (size_t i = 0; i < params.size(); ++i) {
    auto it = state.find(OptimizerStateKey(params[i]));
    if (it == state.end()) continue;
    const std::string at = "optim." + std::to_string(i) + ".";
    auto put = [&](const char* name, const torch::Tensor& t) {
      if (t.defined()) tensors->emplace_back(at + name, t);
    };
    json e = {{"param", i}};
    torch::optim::OptimizerParamState* s = it->second.get();
    if (auto* sgd = dynamic_cast<torch::optim::SGDParamState*>(s)) {
      e["type"] = "sgd";
      put("momentum_buffer", sgd->momentum_buffer());
    } else if (auto* adam = dynamic_cast<torch::optim::AdamParamState*>(s)) {
      e["type"] = "adam";
      e["step"] = adam->step();
      put("exp_avg", adam->exp_avg());
      put("exp_avg_sq", adam->exp_avg_sq());
      put("max_exp_avg_sq", adam->max_exp_avg_sq());
    } else if (auto* adamw = dynamic_cast<torch::optim::AdamWParamState*>(s)) {
      e["type"] = "adamw";
      e["step"] = adamw->step();
      put("exp_avg", adamw->exp_avg());
      put("exp_avg_sq", adamw->exp_avg_sq());
      put("max_exp_avg_sq", adamw->max_exp_avg_sq());
    } else if (auto* lars = dynamic_cast<LarsParamState*>(s)) {
      e["type"] = "lars";
      e["trust_ratio"] = lars->trust_ratio();
      put("momentum_buffer", lars->momentum_buffer());
    } else if (auto* lamb = dynamic_cast<LambParamState*>(s)) {
      e["type"] = "lamb";
      e["step"] = lamb->step();
      e["trust_ratio"] = lamb->trust_ratio();
      put("exp_avg", lamb->exp_avg());
      put("exp_avg_sq", lamb->exp_avg_sq());
    } else {
      throw std::runtime_error("checkpoint: an optimizer state of an unknown type");
    }
    entries->push_back(std::move(e));
  }
}

// A loaded tensor as the state tensor it replaces: same dtype and layout as the parameter.
torch::Tensor Like(const torch::Tensor& loaded, const torch::Tensor& param) {
  torch::Tensor t = torch::empty_like(param);
  t.copy_(loaded.reshape(param.sizes()));
  return t;
}

}  // namespace

void RestoreOptimizerState(torch::optim::Optimizer& optimizer,
                           const std::vector<torch::Tensor>& params, const CheckpointFile& file) {
  auto& state = optimizer.state();
  state.clear();
  for (const json& e : file.header.at("state").at("optimizer")) {
    const size_t i = e.at("param").get<size_t>();
    if (i >= params.size()) throw CheckpointRejected("an optimizer state of no parameter");
    const torch::Tensor& p = params[i];
    const std::string at = "optim." + std::to_string(i) + ".";
    auto get = [&](const char* name) {
      return file.Has(at + name) ? Like(file.Tensor(at + name), p) : torch::Tensor();
    };
    const std::string type = e.at("type").get<std::string>();
    std::unique_ptr<torch::optim::OptimizerParamState> s;
    if (type == "sgd") {
      auto v = std::make_unique<torch::optim::SGDParamState>();
      v->momentum_buffer(get("momentum_buffer"));
      s = std::move(v);
    } else if (type == "adam") {
      auto v = std::make_unique<torch::optim::AdamParamState>();
      v->step(e.at("step").get<int64_t>());
      v->exp_avg(get("exp_avg")).exp_avg_sq(get("exp_avg_sq"));
      v->max_exp_avg_sq(get("max_exp_avg_sq"));
      s = std::move(v);
    } else if (type == "adamw") {
      auto v = std::make_unique<torch::optim::AdamWParamState>();
      v->step(e.at("step").get<int64_t>());
      v->exp_avg(get("exp_avg")).exp_avg_sq(get("exp_avg_sq"));
      v->max_exp_avg_sq(get("max_exp_avg_sq"));
      s = std::move(v);
    } else if (type == "lars") {
      auto v = std::make_unique<LarsParamState>();
      v->trust_ratio(e.at("trust_ratio").get<double>());
      v->momentum_buffer(get("momentum_buffer"));
      s = std::move(v);
    } else if (type == "lamb") {
      auto v = std::make_unique<LambParamState>();
      v->step(e.at("step").get<int64_t>());
      v->trust_ratio(e.at("trust_ratio").get<double>());
      v->exp_avg(get("exp_avg")).exp_avg_sq(get("exp_avg_sq"));
      s = std::move(v);
    } else {
      throw CheckpointRejected("an optimizer state of unknown type \"" + type + "\"");
    }
    state[OptimizerStateKey(p)] = std::move(s);
  }
}

namespace {

// A checkpoint of an earlier attempt: its step, and where rank r's shard of it is.
struct Candidate {
  int64_t step = 0;
  int64_t attempt = 0;
  std::string dir;  // the attempt's checkpoints/ folder
};

std::vector<Candidate> CandidatesOf(const std::vector<EarlierAttempt>& earlier) {
  std::vector<Candidate> out;
  for (const EarlierAttempt& a : earlier) {
    const fs::path dir = protocol::CheckpointDirPath(a.dir);
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const int64_t step = CheckpointStepOf(it->path().filename().string());
      if (step > 0) out.push_back({step, a.attempt, dir.string()});
    }
  }
  // Newest first: the highest step, then the latest attempt.
  std::sort(out.begin(), out.end(), [](const Candidate& x, const Candidate& y) {
    return x.step != y.step ? x.step > y.step : x.attempt > y.attempt;
  });
  return out;
}

}  // namespace

void Trainer::set_attempt_dir(const std::string& dir) {
  set_stop_file(protocol::StopPath(dir));
  preempt_file_ = protocol::PreemptPath(dir);
  checkpoint_dir_ = protocol::CheckpointDirPath(dir);
  ReadBranchFrom(dir);
  std::ifstream in(protocol::ResumePath(dir));
  if (!in) return;
  const json resume = json::parse(in, nullptr, /*allow_exceptions=*/false);
  const auto list = resume.is_object() ? resume.find("attempts") : resume.end();
  if (list == resume.end() || !list->is_array()) {
    std::cerr << "batchlab-runner[rank " << rank_ << "]: " << protocol::kResumeFile
              << " is not {\"attempts\": [...]}; starting from step 0\n";
    return;
  }
  resume_from_.clear();
  for (const json& a : *list) {
    if (a.is_object() && a.value("dir", std::string()) != "") {
      resume_from_.push_back({a.value("attempt", int64_t{0}), a.value("dir", std::string())});
    }
  }
}

bool Trainer::PreemptRequested() {
  if (PreemptSignalled()) return true;
  if (rank_ != 0 || preempt_file_.empty()) return false;
  if (preempt_file_seen_) return true;
  const Clock::time_point now = Clock::now();
  if (SecondsBetween(last_preempt_check_, now) < 0.1) return false;
  last_preempt_check_ = now;
  preempt_file_seen_ = access(preempt_file_.c_str(), F_OK) == 0;
  return preempt_file_seen_;
}

bool Trainer::CheckpointsEnabled() const {
  return !checkpoint_dir_.empty() && config_.mode == "train";
}

bool Trainer::CheckpointDue() const {
  if (!CheckpointsEnabled()) return false;
  // async_ps/backup: the server's own clock (only it decides; trainer_ps.cc).
  const CheckpointConfig& c = config_.checkpoint;
  if (std::find(c.at_steps.begin(), c.at_steps.end(), step_) != c.at_steps.end()) return true;
  if (c.every_steps > 0 && step_ - last_checkpoint_step_ >= c.every_steps) return true;
  const int64_t samples = SamplesAfter(step_);
  if (c.every_samples > 0 && samples - last_checkpoint_samples_ >= c.every_samples) return true;
  // progress_.elapsed is the same on every rank (the step's shared values).
  return c.every_seconds > 0 && progress_.elapsed - last_checkpoint_seconds_ >= c.every_seconds;
}

std::string Trainer::ConfigHash(int format) const {
  json c = RunConfigToJson(config_);
  for (const char* key : {"run_id", "attempt", "metrics_path", "checkpoint"}) c.erase(key);
  if (format >= 2) {
    // How the run is split is not part of it: a checkpoint goes on at another rank count.
    for (const char* key :
         {"nodes", "ranks_per_node", "world_size", "local_batch_size", "micro_batch_size"}) {
      c.erase(key);
    }
  }
  const std::string text = c.dump();
  return fmt::format("{:016x}", Fnv1a64(text.data(), text.size()));
}

CheckpointFile Trainer::ReadOfThisRun(const std::string& path) const {
  try {
    return ReadCheckpointFile(path, config_.run_id, ConfigHash());
  } catch (const CheckpointRejected& first) {
    // A format-1 file hashed the split too: checked at the rank count that wrote it.
    std::optional<CheckpointFile> old;
    try {
      old = ReadCheckpointFile(path, config_.run_id, /*config_hash=*/"");
    } catch (const CheckpointRejected&) {
      throw first;
    }
    if (old->header.value("format", 0) >= 2) throw first;
    const int written_by = old->header.value("world_size", 0);
    if (written_by != world_) {
      throw CheckpointRejected(fmt::format(
          "it was written by {} ranks in format 1, which resumes only at the rank count that "
          "wrote it (elastic resume needs format 2)", written_by));
    }
    if (old->header.value("config_hash", std::string()) != ConfigHash(1)) throw first;
    return std::move(*old);
  }
}

json Trainer::StateScalars() const {
  const Progress& p = progress_;
  return {{"step", step_},
          {"elapsed", p.elapsed},
          {"initial_loss", p.initial_loss},
          {"have_initial_loss", p.have_initial_loss},
          {"last_eval_step", p.last_eval_step},
          {"last_eval_loss", p.last_eval.loss},
          {"last_eval_accuracy", p.last_eval.accuracy},
          // The resumed attempt's first line takes the seq after the checkpoint line that follows.
          {"next_seq", metrics_ != nullptr ? metrics_->next_seq() + 1 : 0},
          {"sampler_position", sampler_->position()},
          {"sampler_epoch", sampler_->epoch()},
          {"sync", SyncModeName(config_.comm.sync)},
          {"seed", config_.seed},  // a branch run with the trunk's seed takes its generator
          // fp16's dynamic loss scale (null otherwise): the skip/grow machine goes on as it was.
          {"loss_scaler", scaler_ ? json{{"scale", scaler_->scale()},
                                         {"good_steps", scaler_->good_steps()},
                                         {"skipped", scaler_->skipped_steps()}}
                                  : json(nullptr)}};
}

NamedTensors Trainer::StateTensors() {
  NamedTensors t;
  for (size_t i = 0; i < params_.size(); ++i) t.emplace_back("param." + std::to_string(i), params_[i]);
  for (const auto& b : model_->named_buffers()) t.emplace_back("buffer." + b.key(), b.value());
  t.emplace_back("sampler.order", sampler_->order());
  {
    at::Generator gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    t.emplace_back("rng.cpu", gen.get_state());
  }
  if (device_.is_cuda()) {  // dropout and other random kernels on the device
    at::Generator gen = DefaultGenerator(device_);
    std::lock_guard<std::mutex> lock(gen.mutex());
    t.emplace_back("rng.cuda", gen.get_state());
  }
  t.emplace_back("losses", torch::tensor(losses_, torch::kFloat64));
  return t;
}

void Trainer::SaveCheckpoint() {
  const Clock::time_point t0 = Clock::now();
  NamedTensors tensors = StateTensors();
  json state = StateScalars();
  if (exchange_) exchange_->Save(&tensors, &state);  // the sync mode's state
  json optim = json::array();
  SaveOptimizerState(*optimizer_, params_, &tensors, &optim);
  state["optimizer"] = std::move(optim);
  json header = {{"run_id", config_.run_id}, {"config_hash", ConfigHash()},
                 {"step", step_},            {"rank", rank_},
                 {"world_size", world_},     {"state", std::move(state)}};
  std::error_code ec;
  fs::create_directories(checkpoint_dir_, ec);
  const std::string path =
      (fs::path(checkpoint_dir_) / protocol::CheckpointShardName(step_, rank_)).string();
  int64_t bytes = 0;
  std::string failed;
  try {
    bytes = WriteCheckpointFile(path, std::move(header), tensors);
  } catch (const std::exception& e) {
    failed = e.what();  // a full disk: the previous checkpoints stay, and the run goes on
    std::cerr << "batchlab-runner[rank " << rank_ << "]: checkpoint at step " << step_
              << " not written (" << failed << "); the previous one stays valid\n";
  }
  last_checkpoint_step_ = step_;
  last_checkpoint_samples_ = SamplesAfter(step_);
  last_checkpoint_seconds_ = progress_.elapsed;
  if (failed.empty()) PruneCheckpoints();
  if (metrics_ != nullptr) {
    nlohmann::ordered_json line = {{"kind", protocol::kLineCheckpoint},
                                   {"step", step_},
                                   {"checkpoint_seconds", SecondsBetween(t0, Clock::now())},
                                   {"checkpoint_bytes", bytes},
                                   {"checkpoint_time", UnixSeconds()}};
    if (!failed.empty()) line["error"] = failed;
    metrics_->Write(line);
  }
}

void Trainer::PruneCheckpoints() {
  const CheckpointConfig& c = config_.checkpoint;
  std::vector<int64_t> steps;
  std::error_code ec;
  const std::string mine = ".rank-" + std::to_string(rank_) + ".ckpt";
  for (fs::directory_iterator it(checkpoint_dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() > mine.size() && name.compare(name.size() - mine.size(), mine.size(), mine) == 0) {
      steps.push_back(CheckpointStepOf(name.substr(0, name.size() - mine.size()) + ".rank-0.ckpt"));
    }
  }
  std::sort(steps.rbegin(), steps.rend());
  for (size_t i = static_cast<size_t>(c.keep); i < steps.size(); ++i) {
    if (steps[i] <= 0) continue;
    if (std::find(c.at_steps.begin(), c.at_steps.end(), steps[i]) != c.at_steps.end()) continue;
    fs::remove(fs::path(checkpoint_dir_) / protocol::CheckpointShardName(steps[i], rank_), ec);
  }
}

void Trainer::RestoreDataCursor(const CheckpointFile& file,
                                const std::vector<torch::Tensor>& format1_orders) {
  const json& s = file.header.at("state");
  const int64_t position = s.at("sampler_position").get<int64_t>();
  const int64_t epoch = s.at("sampler_epoch").get<int64_t>();
  if (file.header.value("format", 0) >= 2 || format1_orders.size() <= 1) {
    // Global (format 2), or format 1 at one rank: its shard is the whole order.
    sampler_->Restore(file.Tensor("sampler.order"), position, epoch);
    return;
  }
  const int64_t next_step = s.at("step").get<int64_t>() + 1;
  const run_values::BatchSchedule& schedule = length_.schedule;
  const int64_t batch = schedule.constant() ? config_.batch_size : schedule.At(next_step).batch;
  const int64_t local = batch / world_;
  const torch::Tensor order = ShardSampler::GlobalOrderOfShards(
      format1_orders, position, local, sampler_->epoch_rows());
  sampler_->Restore(order, position * world_, epoch);
}

void Trainer::RestoreState(const CheckpointFile& file,
                           const std::vector<torch::Tensor>& format1_orders) {
  const json& s = file.header.at("state");
  if (s.value("sync", std::string()) != SyncModeName(config_.comm.sync)) {
    throw CheckpointRejected("it was written under another comm.sync");
  }
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    const torch::Tensor& v = file.Tensor("param." + std::to_string(i));
    if (v.numel() != params_[i].numel()) throw CheckpointRejected("a parameter of another shape");
    params_[i].copy_(v.reshape(params_[i].sizes()));
  }
  for (auto& b : model_->named_buffers()) b.value().copy_(file.Tensor("buffer." + b.key()));
  RestoreOptimizerState(*optimizer_, params_, file);
  RestoreDataCursor(file, format1_orders);
  // This rank's generator when the checkpoint has one (the shard is its own rank's), else a
  // stream of its own (see the top of this file).
  const bool own_stream = file.header.value("rank", -1) == rank_;
  const uint64_t fresh = DeriveSeed(static_cast<uint64_t>(config_.seed),
                                    static_cast<uint64_t>(rank_) + 1,
                                    kElasticStreamSalt ^ s.at("step").get<uint64_t>());
  {
    at::Generator gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    if (own_stream) {
      gen.set_state(file.Tensor("rng.cpu"));
    } else {
      gen.set_current_seed(fresh);
    }
  }
  if (device_.is_cuda()) {
    at::Generator gen = DefaultGenerator(device_);
    std::lock_guard<std::mutex> lock(gen.mutex());
    if (own_stream && file.Has("rng.cuda")) {
      gen.set_state(file.Tensor("rng.cuda"));
    } else if (!own_stream) {
      gen.set_current_seed(fresh + 1);
    }
  }
  if (scaler_ && s.contains("loss_scaler") && s.at("loss_scaler").is_object()) {
    const json& l = s.at("loss_scaler");
    scaler_->Restore(l.at("scale").get<double>(), l.at("good_steps").get<int64_t>(),
                     l.at("skipped").get<int64_t>());
  }
  const torch::Tensor losses = file.Tensor("losses").to(torch::kFloat64).contiguous();
  losses_.assign(losses.data_ptr<double>(), losses.data_ptr<double>() + losses.numel());
  step_ = s.at("step").get<int64_t>();
  Progress& p = progress_;
  p.elapsed = s.at("elapsed").get<double>();
  p.initial_loss = s.at("initial_loss").get<double>();
  p.have_initial_loss = s.at("have_initial_loss").get<bool>();
  p.last_eval_step = s.at("last_eval_step").get<int64_t>();
  p.last_eval.loss = s.at("last_eval_loss").get<double>();
  p.last_eval.accuracy = s.at("last_eval_accuracy").get<double>();
  if (exchange_) exchange_->Restore(file);
  last_checkpoint_step_ = step_;
  last_checkpoint_samples_ = SamplesAfter(step_);
  last_checkpoint_seconds_ = p.elapsed;
  // Seconds continue from the checkpoint's.
  start_ = Clock::now() - std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(p.elapsed));
}

CheckpointFile Trainer::ReadResumeShard(const std::string& dir, int64_t step, std::string* path,
                                        std::vector<torch::Tensor>* format1_orders) const {
  auto shard = [&](int rank) {
    return (fs::path(dir) / protocol::CheckpointShardName(step, rank)).string();
  };
  *path = shard(rank_);
  std::error_code ec;
  // Fewer ranks wrote it: rank 0's shard says how many.
  if (!fs::exists(*path, ec)) *path = shard(0);
  CheckpointFile file = ReadOfThisRun(*path);
  const int written_by = file.header.value("world_size", 0);
  if (file.header.value("step", int64_t{-1}) != step || written_by < 1) {
    throw CheckpointRejected("its world size or step differs from its name");
  }
  if (rank_ < written_by && file.header.value("rank", -1) != rank_) {
    throw CheckpointRejected(fmt::format("rank {}'s shard of it is missing", rank_));
  }
  if (rank_ >= written_by && rank_ % written_by != file.header.value("rank", -1)) {
    *path = shard(rank_ % written_by);
    file = ReadOfThisRun(*path);
    if (file.header.value("world_size", 0) != written_by) {
      throw CheckpointRejected("its shards disagree on the world size");
    }
  }
  const int format = file.header.value("format", 0);
  format1_orders->clear();
  if (written_by != world_) {
    if (format < 2) {  // ReadOfThisRun refused it already
      throw CheckpointRejected("format 1 resumes only at the rank count that wrote it");
    }
    const json& s = file.header.at("state");
    // What the table says of the mode that wrote it (base/sync_mode.h: re-shardable).
    const std::string sync = s.value("sync", std::string());
    const SyncModeInfo* mode = FindSyncMode(sync);
    const Reshard reshard = mode != nullptr ? mode->reshard : Reshard::kAlways;
    const bool between_averages =
        reshard == Reshard::kAtAverage && s.value("last_average", int64_t{0}) != step;
    if (reshard == Reshard::kNever || between_averages) {
      throw BadConfig(fmt::format(
          "nodes: the checkpoint at step {} was written by {} ranks and this run has {}; comm.sync "
          "\"{}\" keeps a different state on every rank{} that cannot be re-sharded: resume at "
          "nodes = {}",
          step, written_by, world_, sync,
          between_averages ? " between averages (its last at step " +
                                 std::to_string(s.value("last_average", int64_t{0})) + ")"
                           : "",
          written_by));
    }
  } else if (format < 2 && world_ > 1) {
    // Format 1 held each rank's own data shard: the global cursor needs all of them.
    for (int r = 0; r < world_; ++r) {
      format1_orders->push_back(
          r == rank_ ? file.Tensor("sampler.order")
                     : ReadOfThisRun(shard(r)).Tensor("sampler.order"));
    }
  }
  return file;
}

void Trainer::MaybeResume() {
  if (resume_from_.empty() || !CheckpointsEnabled()) return;
  json rejected = json::array();
  for (const Candidate& c : CandidatesOf(resume_from_)) {
    std::string path = (fs::path(c.dir) / protocol::CheckpointShardName(c.step, rank_)).string();
    std::optional<CheckpointFile> file;
    std::vector<torch::Tensor> format1_orders;
    std::string reason;
    try {
      file = ReadResumeShard(c.dir, c.step, &path, &format1_orders);
    } catch (const CheckpointRejected& e) {
      reason = e.what();
      file.reset();
    }
    // Usable only if every rank's shard loads.
    float bad = file ? 0.0f : 1.0f;
    if (world_ > 1) {
      torch::Tensor flag = torch::tensor({bad});
      Allreduce(flag, ReduceOp::kSum);
      bad = flag.item<float>();
    }
    if (bad == 0) {
      try {
        RestoreState(*file, format1_orders);
      } catch (const std::exception& e) {
        // The file passed every check but does not fit this model: the run cannot continue
        // from a half-restored state.
        throw RunnerError(RunnerError::Kind::kInternal,
                          "checkpoint " + path + " passed its checks but cannot be restored: " +
                              e.what());
      }
      resumed_step_ = step_;
      if (metrics_ != nullptr) {
        metrics_->set_next_seq(file->header.at("state").at("next_seq").get<int64_t>());
        nlohmann::ordered_json line = {{"kind", protocol::kLineResume},
                                       {"step", step_},
                                       {"from_attempt", c.attempt},
                                       {"file", path},
                                       {"rejected", rejected}};
        // Elastic resume: the rank count that wrote the checkpoint, when it was another.
        const int written_by = file->header.value("world_size", 0);
        if (written_by != world_) line["from_world_size"] = written_by;
        metrics_->Write(line);
      }
      return;
    }
    if (reason.empty()) reason = "another rank's shard of it is invalid (see stderr.log)";
    std::cerr << "batchlab-runner[rank " << rank_ << "]: checkpoint " << path << " not used: "
              << reason << "\n";
    rejected.push_back({{"file", path}, {"reason", reason}});
  }
  if (metrics_ != nullptr && !rejected.empty()) {
    // No checkpoint loads: from step 0, and the events say why.
    metrics_->Write({{"kind", protocol::kLineResume}, {"step", 0}, {"rejected", rejected}});
  }
}

}  // namespace batchlab::runner
