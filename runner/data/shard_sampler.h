// The distributed sampler: which training rows rank r reads at each step.
//
// The rows are dealt to ranks once (row i belongs to rank i mod K, after a shuffle seeded by the
// run seed that every rank computes alike), so the shards are disjoint and equal in size. Each
// epoch a rank reshuffles its own shard with a generator seeded from (seed, rank, epoch). A step
// takes the next local_batch rows; the tail of a shard that does not fill a batch is skipped.
//
//   ShardSampler sampler(data.train_size(), seed, rank, world_size, local_batch);
//   torch::Tensor rows = sampler.Next();   // int64 [local_batch], a view: no allocation
//   sampler.epoch();                       // completed passes over the shard
#ifndef BATCHLAB_RUNNER_DATA_SHARD_SAMPLER_H_
#define BATCHLAB_RUNNER_DATA_SHARD_SAMPLER_H_

#include <cstdint>

#include <torch/torch.h>

namespace batchlab::runner {

class ShardSampler {
 public:
  // Throws RunnerError (kBadConfig naming batch_size) if a shard holds less than one batch.
  ShardSampler(int64_t dataset_size, int64_t seed, int rank, int world_size, int64_t local_batch);

  torch::Tensor Next();
  int64_t epoch() const { return epoch_; }
  int64_t steps_per_epoch() const { return steps_per_epoch_; }
  int64_t shard_size() const { return shard_.numel(); }
  // The cursor, for checkpoints: this epoch's order of the shard and the position in it.
  const torch::Tensor& order() const { return shard_; }
  int64_t position() const { return position_; }
  // Continues from a cursor order()/position()/epoch() gave (the same shard, reordered).
  void Restore(const torch::Tensor& order, int64_t position, int64_t epoch);
  // From the next step on, `local_batch` rows a step (a batch schedule's switch): the cursor stays;
  // the epoch ends where the new batch no longer fits. Throws as the constructor does.
  void set_local_batch(int64_t local_batch);

 private:
  void Shuffle();

  torch::Tensor shard_;  // this rank's rows, in the current epoch's order
  int64_t seed_;
  int rank_;
  int64_t local_batch_;
  int64_t steps_per_epoch_ = 0;
  int64_t position_ = 0;
  int64_t epoch_ = 0;
};

// A 64-bit seed from parts (splitmix64 chain); the same parts give the same seed everywhere.
uint64_t DeriveSeed(uint64_t a, uint64_t b, uint64_t c = 0);

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_DATA_SHARD_SAMPLER_H_
