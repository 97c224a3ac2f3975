// The critical batch size from steps-to-target at several batch sizes.
//
// McCandlish et al. (2018), arXiv:1812.06162, §2.3 (data/time trade-off): the steps S and examples
// E needed to reach a fixed target at batch size B follow
//   S = S_min (1 + B_noise / B),   E = E_min (1 + B / B_noise),   E_min = S_min · B_noise,
// and the critical batch size B_crit = E_min / S_min (= B_noise under this model) balances the
// two. S is linear in x = 1/B: S = a + b·x with a = S_min and b = E_min, so a weighted linear
// least-squares fit (weights 1/S², i.e. relative errors) recovers both; B_crit = b / a.
// The interval is a bootstrap: over seeds within each batch size when every batch size has at
// least two seeds, otherwise over the fit's relative residuals (Efron & Tibshirani 1993 §9.5).
//
//   std::vector<StepsPoint> pts = {{64, 3100}, {128, 1700}, {256, 1000}, {512, 640}};
//   BATCHLAB_ASSIGN_OR_RETURN(CritFit fit, FitCriticalBatch(pts, CritOptions{}));
//   fmt::print("B_crit = {} [{}, {}]\n", fit.b_crit.value, fit.b_crit.low, fit.b_crit.high);
//   Region r = RegionOf(1024, fit.b_crit.value);  // kDiminishingReturns, ...
#ifndef BATCHLAB_ANALYSIS_CRITICAL_BATCH_H_
#define BATCHLAB_ANALYSIS_CRITICAL_BATCH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/bootstrap.h"
#include "analysis/steps_to_target.h"
#include "base/status.h"

namespace batchlab::analysis {

// One observation: steps to target at a batch size (one seed, or the best configuration's mean).
struct StepsPoint {
  double batch_size = 0;
  double steps = 0;
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
  std::string bootstrap;              // "seeds" or "residuals"
  int resamples = 0;

  double StepsAt(double batch_size) const;     // S_min (1 + B_crit / B)
  double ExamplesAt(double batch_size) const;  // E_min (1 + B / B_crit)
};

// InvalidArgument for non-positive inputs; FailedPrecondition for fewer than 3 distinct batch
// sizes, or when the data show no trade-off (fitted S_min <= 0: B_crit lies beyond the largest
// batch size; fitted E_min <= 0: steps do not fall with batch size).
StatusOr<CritFit> FitCriticalBatch(const std::vector<StepsPoint>& points, const CritOptions& opt);

// The per-seed observations of the best configuration at each batch size that reached the target.
std::vector<StepsPoint> StepsPointsOf(const std::vector<BatchBest>& best);

// The three regions of McCandlish et al. Fig. 1, with boundaries where the model is 10% from its
// asymptote: B <= B_crit/10 costs at most 10% more examples than E_min (near-perfect scaling);
// B >= 10·B_crit takes at most 10% more steps than S_min (maximal data parallelism).
enum class Region { kPerfectScaling, kDiminishingReturns, kMaxDataParallelism };
Region RegionOf(double batch_size, double b_crit);
const char* RegionName(Region r);  // "near-perfect scaling", ...

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_CRITICAL_BATCH_H_
