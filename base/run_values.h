// Values derived from a run's config, computed once for every layer (no LibTorch): the runner's
// step count and LR, the orchestrator's ETA and expansion, and the Python client's copy
// (clients/python/batchlab/lr.py, kept equal by tests/clients/lr_parity_test.py) all use these.
//
//   int64_t spe = run_values::StepsPerEpoch(60000, /*world=*/2, /*local_batch=*/128);  // 234
//   int64_t n = run_values::TotalSteps({.epochs = 1}, /*samples_per_step=*/256, spe);  // 234
//   double lr = run_values::ScaledLr(0.1, 256, 64, "linear");                          // 0.4
#ifndef BATCHLAB_BASE_RUN_VALUES_H_
#define BATCHLAB_BASE_RUN_VALUES_H_

#include <cstdint>
#include <optional>
#include <string_view>

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

}  // namespace batchlab::run_values

#endif  // BATCHLAB_BASE_RUN_VALUES_H_
