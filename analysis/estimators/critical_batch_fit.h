// The critical batch size from steps-to-target at several batch sizes.
//
// McCandlish et al. (2018), arXiv:1812.06162, §2.3 (data/time trade-off): the steps S and examples
// E needed to reach a fixed target at batch size B follow
//   S = S_min (1 + B_noise / B),   E = E_min (1 + B / B_noise),   E_min = S_min · B_noise,
// and the critical batch size B_crit = E_min / S_min (= B_noise under this model) balances the
// two. S is linear in x = 1/B: S = a + b·x with a = S_min and b = E_min, so a weighted linear
// least-squares fit (weights 1/S², i.e. relative errors) recovers both; B_crit = b / a.
// The interval is a bootstrap that combines every source of noise the data show (docs/methods.md
// §3): the seed-to-seed variation of steps-to-target (pooled relative deviations from each batch
// size's seed mean), the fit's lack of fit beyond it (the batch-size means' relative residuals,
// shrunk by the part the seed noise already explains), and the quantisation of steps-to-target by
// the evaluation cadence (a uniform draw within the steps between two evaluations). Too few
// points or seeds for an honest interval leave it unavailable with the reason (never zero width).
//
//   std::vector<StepsPoint> pts = {{64, 3100}, {128, 1700}, {256, 1000}, {512, 640}};
//   BATCHLAB_ASSIGN_OR_RETURN(CritFit fit, FitCriticalBatch(pts, CritOptions{}));
//   fmt::print("B_crit = {} [{}, {}]\n", fit.b_crit.value, fit.b_crit.low, fit.b_crit.high);
//   Region r = RegionOf(1024, fit.b_crit.value);  // kDiminishingReturns, ...
#ifndef BATCHLAB_ANALYSIS_ESTIMATORS_CRITICAL_BATCH_FIT_H_
#define BATCHLAB_ANALYSIS_ESTIMATORS_CRITICAL_BATCH_FIT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/estimators/bootstrap.h"
#include "analysis/estimators/steps_to_target.h"
#include "base/status.h"

namespace batchlab::analysis {

// One observation: steps to target at a batch size (one seed, or the best configuration's mean).
struct StepsPoint {
  double batch_size = 0;
  double steps = 0;
  // Steps between the evaluation that met the target and the one before it (the first
  // evaluation: its step): the target was crossed somewhere in (steps − resolution, steps].
  // 0 or 1: resolved to the step.
  double resolution = 0;
};

struct CritOptions {
  int resamples = 2000;
  double confidence = 0.95;
  uint64_t seed = 1;
};

struct CritResidual {
  double batch_size = 0;
  double steps = 0;     // observed
  double fitted = 0;    // S_min (1 + B_noise / B)
  double resolution = 0;  // the point's evaluation cadence (StepsPoint::resolution)
  double relative = 0;  // (observed − fitted) / fitted
};

struct CritFit {
  Interval s_min;   // steps at infinite batch
  Interval e_min;   // examples at batch → 0
  Interval b_crit;  // E_min / S_min
  std::vector<CritResidual> residuals;
  double rms_relative_residual = 0;
  int points = 0;
  int batch_sizes = 0;
  bool b_crit_outside_sweep = false;  // B_crit below the smallest or above the largest B fitted
  // What the bootstrap resampled: "seeds+residuals", "seeds" (the lack of fit is explained by
  // the seed noise) or "residuals" (one seed per batch size), "+quantisation" when the
  // evaluation cadence was drawn as well.
  std::string bootstrap;
  int resamples = 0;
  int seed_dof = 0;                 // Σ (seeds − 1) over batch sizes: what the seed term rests on
  double seed_relative_sd = 0;      // pooled relative seed-to-seed standard deviation of steps
  double lack_of_fit_relative_sd = 0;  // of the batch-size means beyond the seed noise
  double max_resolution = 0;        // the coarsest evaluation cadence among the points

  double StepsAt(double batch_size) const;     // S_min (1 + B_crit / B)
  double ExamplesAt(double batch_size) const;  // E_min (1 + B / B_crit)
};

// InvalidArgument for non-positive inputs; FailedPrecondition for fewer than 3 distinct batch
// sizes, or when the data show no trade-off (fitted S_min <= 0: B_crit lies beyond the largest
// batch size; fitted E_min <= 0: steps do not fall with batch size). The steps are fitted at the
// middle of their quantisation interval, steps − (resolution − 1)/2. The intervals are
// unavailable (Interval::unavailable says why) with one seed per batch size and only 3 batch
// sizes (one residual degree of freedom), or when no resample differs from the fit.
StatusOr<CritFit> FitCriticalBatch(const std::vector<StepsPoint>& points, const CritOptions& opt);

// The per-seed observations of the best configuration at each batch size that reached the target,
// with the evaluation cadence each was resolved to.
std::vector<StepsPoint> StepsPointsOf(const std::vector<BatchBest>& best);

// The three regions of McCandlish et al. Fig. 1, with boundaries where the model is 10% from its
// asymptote: B <= B_crit/10 costs at most 10% more examples than E_min (near-perfect scaling);
// B >= 10·B_crit takes at most 10% more steps than S_min (maximal data parallelism).
enum class Region { kPerfectScaling, kDiminishingReturns, kMaxDataParallelism };
Region RegionOf(double batch_size, double b_crit);
const char* RegionName(Region r);  // "near-perfect scaling", ...

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_ESTIMATORS_CRITICAL_BATCH_FIT_H_
