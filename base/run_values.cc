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

}  // namespace batchlab::run_values
