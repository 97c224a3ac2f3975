// Values derived from a run's config, computed once for every layer (no LibTorch): the runner's
// step count and LR, the orchestrator's ETA and expansion, and the Python client's copy
// (clients/python/batchlab/lr.py, kept equal by tests/clients/lr_parity_test.py) all use these.
//
//   int64_t spe = run_values::StepsPerEpoch(60000, /*world=*/2, /*local_batch=*/128);  // 234
//   int64_t n = run_values::TotalSteps({.epochs = 1}, /*samples_per_step=*/256, spe);  // 234
//   double lr = run_values::ScaledLr(0.1, 256, 64, "linear");                          // 0.4
//
//   BatchSchedule s{.first_batch = 64, .at_samples = {1000}, .batch_sizes = {256}};
//   s.At(16);          // {.batch = 64, .samples_before = 960}: step 16 still starts below 1000
//   s.At(17).batch;    // 256: the first step that starts with >= 1000 samples seen
#ifndef BATCHLAB_BASE_RUN_VALUES_H_
#define BATCHLAB_BASE_RUN_VALUES_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace batchlab::run_values {

// Config "budget": 0 = that limit is not set.
struct Budget {
  double epochs = 0;
  int64_t steps = 0;
  int64_t samples = 0;
  double seconds = 0;
};

// Steps in one pass over the data: each of `world` ranks keeps floor(N / world) rows and takes
// `local_batch` of them per step; the tail that does not fill a batch is skipped.
int64_t StepsPerEpoch(int64_t dataset_size, int64_t world, int64_t local_batch);

// The run's optimizer steps: the smallest of its limits (at least 1 each), epochs as
// round(epochs x steps_per_epoch), samples rounded up to whole steps; 0 when only seconds
// bound it. `steps_per_epoch` 0 (unknown) ignores an epochs limit.
int64_t TotalSteps(const Budget& budget, int64_t samples_per_step, int64_t steps_per_epoch);

// lr.base scaled from lr.base_batch_size to `batch` by `rule` (none, linear: Goyal et al. 2017,
// sqrt: Krizhevsky 2014, Hoffer et al. 2017); nullopt for an unknown rule.
std::optional<double> ScaledLr(double base, int64_t batch, int64_t base_batch, std::string_view rule);

// Config "batch_schedule" (docs/spec.md, "Batch-size schedules"): the run starts at batch_size
// (first_batch) and, from the first step that begins with at least at_samples[i] training samples
// seen, trains at batch_sizes[i]. Steps count from 1; everything here is arithmetic on the
// schedule, so any step's batch and the samples before it follow from the step alone (a resumed
// run needs no more state than its step). An empty schedule is a constant batch.
struct BatchSchedule {
  int64_t first_batch = 0;
  std::vector<int64_t> at_samples;   // increasing, > 0
  std::vector<int64_t> batch_sizes;  // one per at_samples entry

  struct Point {
    int64_t batch = 0;           // the global batch of this step
    int64_t samples_before = 0;  // training samples seen before it
    int segment = 0;             // 0: first_batch; i + 1: batch_sizes[i]
  };
  bool constant() const { return at_samples.empty(); }
  Point At(int64_t step) const;
  // Training samples seen after `steps` steps.
  int64_t SamplesAfter(int64_t steps) const;
  // Steps until at least `samples` samples are seen (0 for samples <= 0).
  int64_t StepsFor(int64_t samples) const;
  // The largest batch of the schedule.
  int64_t LargestBatch() const;
};

// TotalSteps for a run with a batch schedule: a samples limit is reached at StepsFor(samples); an
// epochs limit is epochs x epoch_samples samples (epoch_samples: the rows all ranks together
// read in one pass; 0 ignores an epochs limit).
int64_t TotalSteps(const Budget& budget, const BatchSchedule& schedule, int64_t epoch_samples);

// A run's length from everything that sets it (item 5 of issue 31: computed here only): the
// trainer, its data sampler, the orchestrator's ETA and expected seconds and the branch study all
// read LengthOf. `one_worker_steps` is the sync mode's (base/sync_mode.h: async_ps, where rank 0
// reads no data and a step is one worker's local batch).
//
//   RunShape shape{.train_samples = 60000, .world = 2, .batch = 256, .local_batch = 128,
//                  .budget = {.epochs = 1}};
//   LengthOf(shape).total_steps;   // 234
struct RunShape {
  int64_t train_samples = 0;  // 0: unknown (an epochs limit is then ignored)
  int64_t world = 1;
  int64_t batch = 0;        // the global batch (the schedule's first)
  int64_t local_batch = 0;  // one rank's share of it
  bool one_worker_steps = false;
  BatchSchedule schedule;  // constant when at_samples is empty; first_batch is set from batch
  Budget budget;
};

struct RunLength {
  int64_t data_ranks = 0;             // ranks that read a shard of the data
  int64_t shard_steps_per_epoch = 0;  // one data rank's steps in one pass over its shard
  int64_t steps_per_epoch = 0;        // the run's steps in one pass (async_ps: every worker's)
  int64_t samples_per_step = 0;       // of the first step (a schedule changes it)
  int64_t total_steps = 0;            // 0: only a seconds budget bounds the run
  BatchSchedule schedule;             // the shape's, first_batch = batch
  // Training samples seen after `steps` steps.
  int64_t SamplesAfter(int64_t steps) const {
    return schedule.constant() ? steps * samples_per_step : schedule.SamplesAfter(steps);
  }
};

RunLength LengthOf(const RunShape& shape);

}  // namespace batchlab::run_values

#endif  // BATCHLAB_BASE_RUN_VALUES_H_
