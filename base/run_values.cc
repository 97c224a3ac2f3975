// Derived run values (see run_values.h).
#include "base/run_values.h"

#include <algorithm>
#include <cmath>

namespace batchlab::run_values {

int64_t StepsPerEpoch(int64_t dataset_size, int64_t world, int64_t local_batch) {
  if (world <= 0 || local_batch <= 0) return 0;
  return (dataset_size / world) / local_batch;
}

int64_t TotalSteps(const Budget& b, int64_t samples_per_step, int64_t steps_per_epoch) {
  int64_t total = 0;
  auto limit = [&total](int64_t steps) {
    steps = std::max<int64_t>(steps, 1);
    total = total == 0 ? steps : std::min(total, steps);
  };
  if (b.steps > 0) limit(b.steps);
  if (b.epochs > 0 && steps_per_epoch > 0) {
    limit(static_cast<int64_t>(std::llround(b.epochs * static_cast<double>(steps_per_epoch))));
  }
  if (b.samples > 0 && samples_per_step > 0) {
    limit((b.samples + samples_per_step - 1) / samples_per_step);
  }
  return total;
}

std::optional<double> ScaledLr(double base, int64_t batch, int64_t base_batch,
                               std::string_view rule) {
  const double ratio = static_cast<double>(batch) / static_cast<double>(base_batch);
  if (rule == "none") return base;
  if (rule == "linear") return base * ratio;
  if (rule == "sqrt") return base * std::sqrt(ratio);
  return std::nullopt;
}

BatchSchedule::Point BatchSchedule::At(int64_t step) const {
  Point p{first_batch, 0, 0};
  int64_t done = 0;  // steps before the current segment's first
  for (size_t i = 0; i < at_samples.size(); ++i) {
    // Steps of the current segment before the samples reach at_samples[i] (0 if they already do).
    const int64_t need = std::max<int64_t>(at_samples[i] - p.samples_before, 0);
    const int64_t steps = (need + p.batch - 1) / p.batch;
    if (step - 1 < done + steps) break;  // `step` is in this segment
    done += steps;
    p.samples_before += steps * p.batch;
    p.batch = batch_sizes[i];
    p.segment = static_cast<int>(i) + 1;
  }
  p.samples_before += std::max<int64_t>(step - 1 - done, 0) * p.batch;
  return p;
}

int64_t BatchSchedule::SamplesAfter(int64_t steps) const {
  if (steps <= 0) return 0;
  const Point last = At(steps);
  return last.samples_before + last.batch;
}

int64_t BatchSchedule::StepsFor(int64_t samples) const {
  if (samples <= 0) return 0;
  int64_t seen = 0, done = 0, batch = first_batch;
  for (size_t i = 0; i < at_samples.size() && seen < samples; ++i) {
    const int64_t until = std::min(at_samples[i], samples);
    const int64_t steps = (std::max<int64_t>(until - seen, 0) + batch - 1) / batch;
    done += steps;
    seen += steps * batch;
    if (seen >= samples) return done;
    batch = batch_sizes[i];
  }
  return done + (samples - seen + batch - 1) / batch;
}

int64_t BatchSchedule::LargestBatch() const {
  int64_t largest = first_batch;
  for (int64_t b : batch_sizes) largest = std::max(largest, b);
  return largest;
}

int64_t TotalSteps(const Budget& b, const BatchSchedule& schedule, int64_t epoch_samples) {
  Budget steps_only = b;
  steps_only.epochs = 0;
  steps_only.samples = 0;
  int64_t total = TotalSteps(steps_only, 0, 0);
  auto limit = [&total](int64_t steps) {
    steps = std::max<int64_t>(steps, 1);
    total = total == 0 ? steps : std::min(total, steps);
  };
  if (b.samples > 0) limit(schedule.StepsFor(b.samples));
  if (b.epochs > 0 && epoch_samples > 0) {
    limit(schedule.StepsFor(
        static_cast<int64_t>(std::llround(b.epochs * static_cast<double>(epoch_samples)))));
  }
  return total;
}

RunLength LengthOf(const RunShape& shape) {
  RunLength n;
  n.schedule = shape.schedule;
  n.schedule.first_batch = shape.batch;
  n.data_ranks = shape.one_worker_steps ? std::max<int64_t>(shape.world - 1, 1) : shape.world;
  n.samples_per_step = shape.one_worker_steps ? shape.local_batch : shape.batch;
  n.shard_steps_per_epoch =
      shape.train_samples > 0 ? StepsPerEpoch(shape.train_samples, n.data_ranks, shape.local_batch)
                              : 0;
  // async_ps: a pass over the data is every worker's pass over its shard, one update each step.
  n.steps_per_epoch =
      shape.one_worker_steps ? n.shard_steps_per_epoch * n.data_ranks : n.shard_steps_per_epoch;
  n.total_steps = n.schedule.constant()
                      ? TotalSteps(shape.budget, n.samples_per_step, n.steps_per_epoch)
                      : TotalSteps(shape.budget, n.schedule, shape.train_samples);
  return n;
}

}  // namespace batchlab::run_values
