// Disjoint per-rank shards with per-(seed, rank, epoch) shuffles (see shard_sampler.h).
#include "runner/data/shard_sampler.h"

#include <ATen/CPUGeneratorImpl.h>

#include "runner/config/runner_error.h"

namespace batchlab::runner {
namespace {

uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t DeriveSeed(uint64_t a, uint64_t b, uint64_t c) {
  return SplitMix(SplitMix(SplitMix(a) ^ b) ^ c);
}

ShardSampler::ShardSampler(int64_t dataset_size, int64_t seed, int rank, int world_size,
                           int64_t local_batch)
    : seed_(seed), rank_(rank), local_batch_(local_batch) {
  at::Generator deal = at::detail::createCPUGenerator(DeriveSeed(seed, 0xdea1));
  const torch::Tensor order = torch::randperm(dataset_size, deal, torch::kInt64);
  shard_ = order.slice(0, rank, dataset_size, world_size).contiguous();
  // Equal shards: every rank keeps floor(N / K) rows, so all ranks run the same step count.
  shard_ = shard_.narrow(0, 0, dataset_size / world_size).clone();
  set_local_batch(local_batch);
  Shuffle();
}

void ShardSampler::set_local_batch(int64_t local_batch) {
  steps_per_epoch_ = shard_.numel() / local_batch;
  if (steps_per_epoch_ < 1) {
    throw BadConfig("batch_size: the local batch of " + std::to_string(local_batch) +
                    " is larger than this rank's shard of " + std::to_string(shard_.numel()) +
                    " training samples; use a smaller batch_size or fewer ranks");
  }
  local_batch_ = local_batch;
}

void ShardSampler::Shuffle() {
  at::Generator gen = at::detail::createCPUGenerator(DeriveSeed(static_cast<uint64_t>(seed_),
                                                                static_cast<uint64_t>(rank_) + 1,
                                                                static_cast<uint64_t>(epoch_)));
  shard_ = shard_.index_select(0, torch::randperm(shard_.numel(), gen, torch::kInt64));
  position_ = 0;
}

void ShardSampler::Restore(const torch::Tensor& order, int64_t position, int64_t epoch) {
  if (order.numel() != shard_.numel() || position < 0 || position > order.numel()) {
    throw std::runtime_error("the data cursor does not fit this rank's shard");
  }
  shard_ = order.to(torch::kInt64).contiguous().clone();
  position_ = position;
  epoch_ = epoch;
}

torch::Tensor ShardSampler::Next() {
  if (position_ + local_batch_ > shard_.numel()) {
    ++epoch_;
    Shuffle();
  }
  torch::Tensor rows = shard_.narrow(0, position_, local_batch_);
  position_ += local_batch_;
  return rows;
}

}  // namespace batchlab::runner
