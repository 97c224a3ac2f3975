// One global order per epoch, cut by rank (see shard_sampler.h).
#include "runner/data/shard_sampler.h"

#include <string>

#include <ATen/CPUGeneratorImpl.h>

#include "base/run_values.h"
#include "runner/config/runner_error.h"

namespace batchlab::runner {
namespace {

uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The epoch shuffles' generator: (seed, 1, epoch) is the one-rank generator of format 1, so one
// rank reads what it read before.
constexpr uint64_t kEpochStream = 1;

}  // namespace

uint64_t DeriveSeed(uint64_t a, uint64_t b, uint64_t c) {
  return SplitMix(SplitMix(SplitMix(a) ^ b) ^ c);
}

ShardSampler::ShardSampler(int64_t dataset_size, int64_t seed, int rank, int world_size,
                           int64_t local_batch)
    : seed_(seed), rank_(rank), world_(world_size), local_batch_(local_batch) {
  at::Generator deal = at::detail::createCPUGenerator(DeriveSeed(seed, 0xdea1));
  order_ = torch::randperm(dataset_size, deal, torch::kInt64);
  set_local_batch(local_batch);
  Shuffle();
}

void ShardSampler::set_local_batch(int64_t local_batch) {
  const int64_t global = local_batch * world_;
  steps_per_epoch_ = run_values::StepsPerEpoch(order_.numel(), world_, local_batch);
  if (steps_per_epoch_ < 1) {
    throw BadConfig("batch_size: the global batch of " + std::to_string(global) + " (" +
                    std::to_string(local_batch) + " a rank) is larger than the " +
                    std::to_string(order_.numel()) +
                    " training samples; use a smaller batch_size or more data");
  }
  local_batch_ = local_batch;
}

void ShardSampler::Shuffle() {
  at::Generator gen = at::detail::createCPUGenerator(
      DeriveSeed(static_cast<uint64_t>(seed_), kEpochStream, static_cast<uint64_t>(epoch_)));
  order_ = order_.index_select(0, torch::randperm(order_.numel(), gen, torch::kInt64));
  position_ = 0;
}

void ShardSampler::Restore(const torch::Tensor& order, int64_t position, int64_t epoch) {
  if (order.numel() != order_.numel() || position < 0 || position > order.numel()) {
    throw std::runtime_error("the data cursor (" + std::to_string(order.numel()) +
                             " rows, position " + std::to_string(position) +
                             ") does not fit this run's " + std::to_string(order_.numel()) +
                             " training rows");
  }
  order_ = order.to(torch::kInt64).contiguous().clone();
  position_ = position;
  epoch_ = epoch;
}

torch::Tensor ShardSampler::Next() {
  const int64_t global = local_batch_ * world_;
  if (position_ + global > order_.numel()) {
    ++epoch_;
    Shuffle();
  }
  torch::Tensor rows = order_.narrow(0, position_ + rank_ * local_batch_, local_batch_);
  position_ += global;
  return rows;
}

torch::Tensor ShardSampler::GlobalOrderOfShards(const std::vector<torch::Tensor>& shards,
                                                int64_t local_position, int64_t local_batch,
                                                int64_t dataset_size) {
  const int64_t k = static_cast<int64_t>(shards.size());
  const int64_t shard = shards.empty() ? 0 : shards[0].numel();
  std::vector<torch::Tensor> parts;
  // What was read (its order no longer matters), then the rest of the epoch batch by batch.
  for (const torch::Tensor& s : shards) parts.push_back(s.narrow(0, 0, local_position));
  int64_t at = local_position;
  for (; local_batch > 0 && at + local_batch <= shard; at += local_batch) {
    for (const torch::Tensor& s : shards) parts.push_back(s.narrow(0, at, local_batch));
  }
  for (const torch::Tensor& s : shards) parts.push_back(s.narrow(0, at, shard - at));
  torch::Tensor order = torch::cat(parts).to(torch::kInt64);
  // The rows no shard held (N mod K of them), in index order.
  torch::Tensor held = torch::zeros({dataset_size}, torch::kBool);
  held.index_fill_(0, order, true);
  order = torch::cat({order, torch::nonzero(held.logical_not()).flatten()});
  if (order.numel() != dataset_size || k * shard > dataset_size) {
    throw std::runtime_error("the format-1 data cursors do not cover the training rows");
  }
  return order.contiguous();
}

}  // namespace batchlab::runner
