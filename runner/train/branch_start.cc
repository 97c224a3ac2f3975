// A branch run of a branch study (docs/spec.md, "Branch study"; Merrill et al. 2025): it starts
// from its trunk's checkpoint at branch.at_step instead of from initialization.
//
// From the trunk's shard of this rank it takes the parameters and buffers, the optimizer's
// per-parameter state (momentum, Adam moments and step counts), and the data cursor: this epoch's
// order of the shard and the position in it, so the branch reads the rows the trunk had not yet
// read, k x B0 of them per step instead of B0. Its own counters start at zero (step 1 is the
// branch's first step; the LR, the batch and the budget are the branch config's). With the
// trunk's seed the branch also takes the trunk's random generator, so a branch at k = 1 with the
// trunk's LR continues the trunk bit for bit; with another seed the rows the trunk had not read
// this epoch are dealt in an order of that seed (the same rows: the same data position), and the
// generator is seeded from it: the branch's seed-to-seed spread is the data-order noise.
//
// The trunk's attempt folders come from branch_from.json in this attempt's folder (the
// orchestrator writes it; docs/protocol.md); the checkpoint is checked against the trunk's run id
// (not its config hash: the branch's config differs by design) and step. The branch may run at
// another rank count K' than the trunk's K (a branch study's `nodes`): its state is the same in
// every shard of format 2, so rank r' reads the trunk's shard r' when r' < K and r' mod K's
// otherwise, as an elastic resume does (trainer_checkpoint.cc); with the trunk's seed a rank the
// trunk had not (r' >= K) seeds its generator from (seed, r', at_step), a stream of its own.
#include <algorithm>
#include <filesystem>
#include <fstream>

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/core.h>

#include "base/sync_mode.h"
#include "runner/config/device.h"
#include "runner/optim/optimizer_state_io.h"
#include "runner/config/runner_error.h"
#include "runner/train/trainer.h"

namespace batchlab::runner {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr uint64_t kBranchOrderSalt = 0xb4a9c4;
// The re-deal is of the global order, the same on every rank (format 1 dealt each rank's shard
// with stream rank + 1; one rank's stream 1 is kept, so a one-rank branch deals as before).
constexpr uint64_t kBranchOrderStream = 1;
// A branch rank the trunk had no generator for (a branch at more ranks than its trunk).
constexpr uint64_t kBranchRankSalt = 0xb4a9e1;

}  // namespace

void Trainer::ReadBranchFrom(const std::string& attempt_dir) {
  std::ifstream in(protocol::BranchFromPath(attempt_dir));
  if (!in) return;
  const json from = json::parse(in, nullptr, /*allow_exceptions=*/false);
  const auto list = from.is_object() ? from.find("trunk_dirs") : from.end();
  if (list == from.end() || !list->is_array()) {
    throw RunnerError(RunnerError::Kind::kInternal,
                      std::string(protocol::kBranchFromFile) + " in " + attempt_dir +
                          " is not {\"trunk_dirs\": [...]}");
  }
  trunk_dirs_.clear();
  for (const json& d : *list) {
    if (d.is_string()) trunk_dirs_.push_back(d.get<std::string>());
  }
}

void Trainer::MaybeStartBranch() {
  const BranchConfig& br = config_.branch;
  if (!br.present()) return;
  if (config_.mode != "train") return;
  std::optional<CheckpointFile> file;
  std::string tried;
  for (const std::string& dir : trunk_dirs_) {
    fs::path path = protocol::CheckpointShardPath(dir, br.at_step, rank_);
    // Fewer trunk ranks than this branch has: rank 0's shard says how many.
    if (!fs::exists(path)) path = protocol::CheckpointShardPath(dir, br.at_step, 0);
    if (!fs::exists(path)) {
      tried += fmt::format("\n  {}: no such file",
                           protocol::CheckpointShardPath(dir, br.at_step, rank_));
      continue;
    }
    try {
      file = ReadCheckpointFile(path.string(), br.trunk_run_id, /*config_hash=*/"");
      const int trunk_world = file->header.value("world_size", 0);
      if (trunk_world < 1) throw CheckpointRejected("its world size is missing");
      if (rank_ < trunk_world && file->header.value("rank", -1) != rank_) {
        throw CheckpointRejected(fmt::format("rank {}'s shard of it is missing", rank_));
      }
      if (rank_ >= trunk_world && file->header.value("rank", -1) != rank_ % trunk_world) {
        path = protocol::CheckpointShardPath(dir, br.at_step, rank_ % trunk_world);
        file = ReadCheckpointFile(path.string(), br.trunk_run_id, /*config_hash=*/"");
        if (file->header.value("world_size", 0) != trunk_world) {
          throw CheckpointRejected("its shards disagree on the world size");
        }
      }
      if (file->header.value("step", int64_t{-1}) != br.at_step) {
        throw CheckpointRejected("its step differs from its name");
      }
      if (file->header.value("format", 0) < 2 && (world_ > 1 || trunk_world != world_)) {
        throw CheckpointRejected(
            "it is of format 1 (one data shard per rank), which a branch does not rebuild; "
            "run the trunk again with this batchlab");
      }
      break;
    } catch (const CheckpointRejected& e) {
      tried += fmt::format("\n  {}: {}", path.string(), e.what());
      file.reset();
    }
  }
  if (!file) {
    // No collective is needed to agree: every rank fails the same way (the run is failed and the
    // orchestrator says why).
    throw RunnerError(
        RunnerError::Kind::kInternal,
        fmt::format("branch: no usable checkpoint of trunk run {} at step {} for rank {}{}{}",
                    br.trunk_run_id, br.at_step, rank_,
                    trunk_dirs_.empty() ? " (no trunk folders: branch_from.json missing?)" : "",
                    tried));
  }
  const json& s = file->header.at("state");
  if (s.value("sync", std::string()) != SyncModeName(config_.comm.sync)) {
    throw BadConfig("comm.sync: the trunk ran \"" + s.value("sync", std::string()) +
                    "\" and this branch \"" + SyncModeName(config_.comm.sync) +
                    "\"; use the trunk's");
  }
  const int trunk_world = file->header.value("world_size", 0);
  // What the table says of the mode (base/sync_mode.h: re-shardable), as a resume reads it.
  const SyncModeInfo& mode = InfoOf(config_.comm.sync);
  if (trunk_world != world_ &&
      (mode.reshard == Reshard::kNever ||
       (mode.reshard == Reshard::kAtAverage &&
        s.value("last_average", int64_t{0}) != br.at_step))) {
    throw BadConfig(fmt::format(
        "nodes: the trunk's checkpoint at step {} was written by {} ranks and this branch has "
        "{}; comm.sync \"{}\" keeps a different state on every rank that cannot be re-sharded: "
        "run the branch at nodes = the trunk's",
        br.at_step, trunk_world, world_, mode.name));
  }
  // Rank r' < K takes its own trunk rank's generator; a rank the trunk had not, a fresh stream.
  const bool own_stream = file->header.value("rank", -1) == rank_;
  torch::NoGradGuard no_grad;
  try {
    for (size_t i = 0; i < params_.size(); ++i) {
      const torch::Tensor& v = file->Tensor("param." + std::to_string(i));
      if (v.numel() != params_[i].numel()) {
        throw CheckpointRejected("parameter " + std::to_string(i) + " has another shape");
      }
      params_[i].copy_(v.reshape(params_[i].sizes()));
    }
    for (auto& b : model_->named_buffers()) b.value().copy_(file->Tensor("buffer." + b.key()));
    RestoreOptimizerState(*optimizer_, params_, *file);
  } catch (const CheckpointRejected& e) {
    throw BadConfig(std::string("branch: the trunk's checkpoint does not fit this run's model "
                                "or optimizer (") +
                    e.what() + "); a branch keeps the trunk's model, data and optimizer");
  }
  // The data cursor: the trunk's order of this epoch and its position; the rows not yet read
  // re-dealt under another seed.
  torch::Tensor order = file->Tensor("sampler.order").to(torch::kInt64).contiguous().clone();
  const int64_t position = s.at("sampler_position").get<int64_t>();
  const int64_t epoch = s.at("sampler_epoch").get<int64_t>();
  const bool trunk_seed = s.value("seed", int64_t{-1}) == config_.seed;
  if (!trunk_seed && position < order.numel()) {
    at::Generator gen = at::detail::createCPUGenerator(
        DeriveSeed(static_cast<uint64_t>(config_.seed), kBranchOrderStream,
                   kBranchOrderSalt ^ static_cast<uint64_t>(br.at_step)));
    torch::Tensor rest = order.narrow(0, position, order.numel() - position);
    rest.copy_(rest.index_select(0, torch::randperm(rest.numel(), gen, torch::kInt64)));
  }
  sampler_->Restore(order, position, epoch);
  {
    at::Generator gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    if (trunk_seed && own_stream) {
      gen.set_state(file->Tensor("rng.cpu"));
    } else if (trunk_seed) {
      gen.set_current_seed(DeriveSeed(static_cast<uint64_t>(config_.seed),
                                      static_cast<uint64_t>(rank_) + 1,
                                      kBranchRankSalt ^ static_cast<uint64_t>(br.at_step)));
    } else {
      gen.set_current_seed(DeriveSeed(static_cast<uint64_t>(config_.seed), br.at_step));
    }
  }
  if (device_.is_cuda()) {  // dropout and other random kernels on the device
    at::Generator gen = DefaultGenerator(device_);
    std::lock_guard<std::mutex> lock(gen.mutex());
    if (trunk_seed && own_stream && file->Has("rng.cuda")) {
      gen.set_state(file->Tensor("rng.cuda"));
    } else if (trunk_seed && !own_stream) {
      gen.set_current_seed(DeriveSeed(static_cast<uint64_t>(config_.seed),
                                      static_cast<uint64_t>(rank_) + 1,
                                      kBranchRankSalt ^ static_cast<uint64_t>(br.at_step)) +
                           1);
    } else {
      gen.set_current_seed(DeriveSeed(static_cast<uint64_t>(config_.seed), br.at_step, 1));
    }
  }
}

}  // namespace batchlab::runner
