// The distributed sampler: which training rows rank r reads at each step.
//
// The data order does not depend on the split (docs/protocol.md, "Elastic resume"): the global
// order of epoch e is a function of the seed and e alone, and a step's global batch is the next
// B rows of it; rank r of K reads rows [r * B/K, (r + 1) * B/K) of that batch. Epoch 0's order is
// a shuffle of all N rows seeded by the run seed, reshuffled by a generator of (seed, epoch);
// each later epoch reshuffles the one before it. An epoch ends where the next global batch no
// longer fits in the N rows (the tail is skipped). At one rank this is the order the runner read
// before elastic resume (checkpoint format 1) bit for bit; at K ranks it is the one-rank order cut
// by rank, so a checkpoint written by K ranks goes on at K' on the same samples.
//
//   ShardSampler sampler(data.train_size(), seed, rank, world_size, local_batch);
//   torch::Tensor rows = sampler.Next();   // int64 [local_batch], a view: no allocation
//   sampler.epoch();                       // completed passes over the data
#ifndef BATCHLAB_RUNNER_DATA_SHARD_SAMPLER_H_
#define BATCHLAB_RUNNER_DATA_SHARD_SAMPLER_H_

#include <cstdint>
#include <vector>

#include <torch/torch.h>

namespace batchlab::runner {

class ShardSampler {
 public:
  // Throws RunnerError (kBadConfig naming batch_size) if the data hold less than one global batch.
  ShardSampler(int64_t dataset_size, int64_t seed, int rank, int world_size, int64_t local_batch);

  // This rank's part of the next step's global batch.
  torch::Tensor Next();
  int64_t epoch() const { return epoch_; }
  // Global batches per epoch: floor(N / (K * local_batch)), the same at every split of one batch.
  int64_t steps_per_epoch() const { return steps_per_epoch_; }
  // The rows an epoch orders (N): every split reads its global batches from them.
  int64_t epoch_rows() const { return order_.numel(); }
  // The global cursor, for checkpoints: this epoch's order of all N rows and the global rows
  // already read in it (every rank holds the same).
  const torch::Tensor& order() const { return order_; }
  int64_t position() const { return position_; }
  // Continues from a global cursor order()/position()/epoch() gave, at any rank count.
  void Restore(const torch::Tensor& order, int64_t position, int64_t epoch);
  // From the next step on, `local_batch` rows a step (a batch schedule's switch): the cursor stays;
  // the epoch ends where the new global batch no longer fits. Throws as the constructor does.
  void set_local_batch(int64_t local_batch);

  // Checkpoint format 1 held each rank's own shard (rows dealt round-robin after epoch 0's
  // shuffle, K rows apart) in its epoch order and a local position. The global order whose
  // split at K ranks reads the same rows for the rest of the epoch: step j's global batch is
  // rank 0's next local_batch rows, then rank 1's, ...; the rows no rank reads this epoch last.
  // `shards[r]` is rank r's format-1 order; `local_position` the rows each rank had read.
  static torch::Tensor GlobalOrderOfShards(const std::vector<torch::Tensor>& shards,
                                           int64_t local_position, int64_t local_batch,
                                           int64_t dataset_size);

 private:
  void Shuffle();

  torch::Tensor order_;  // all N rows, in the current epoch's global order
  int64_t seed_;
  int rank_;
  int world_;
  int64_t local_batch_;
  int64_t steps_per_epoch_ = 0;
  int64_t position_ = 0;  // global rows read this epoch
  int64_t epoch_ = 0;
};

// A 64-bit seed from parts (splitmix64 chain); the same parts give the same seed everywhere.
uint64_t DeriveSeed(uint64_t a, uint64_t b, uint64_t c = 0);

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_DATA_SHARD_SAMPLER_H_
