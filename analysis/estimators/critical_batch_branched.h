// The critical batch size over training from a branch study (Merrill et al. 2025, "Critical Batch
// Size Revisited", arXiv 2505.23971; docs/methods.md, "Critical batch size over training").
//
// At a branch point the trunk (batch B0) is continued at k x B0 for several k, each branch for the
// same Δ samples. Each branch's loss after Δ is smoothed (the mean of its last evaluations); the
// gap of k is its loss minus the smallest k's. Two estimates:
//
//  * Merrill's rule: the largest k x B0 such that every k' <= k has a mean gap within the
//    tolerance ε. A grid value, with no interval.
//  * The crossing: where the gap curve, linear between neighbouring k in log k, first passes the
//    tolerance. The curve is a monotone fit of the mean gaps (weighted isotonic regression, the
//    gaps weighted by their inverse variance), read only up to the first k that passes the
//    tolerance in every resample (so exact pruning of the larger k changes nothing); the older
//    estimator (CbsMethod::kFirstExceedance) reads the raw mean gaps instead. Its interval is a
//    percentile bootstrap (Efron & Tibshirani 1993) over the fit: each k's seeds resampled with
//    replacement (jointly across k when every k ran the same seeds: paired), and within each seed
//    its last evaluations, then refitted; a replicate where no k exceeds the tolerance is +inf.
//    When even the largest k stays within the tolerance the estimate is censored: "≥ k_max x B0",
//    never a number; an interval whose upper end is +inf is reported as open-ended.
//
//   std::vector<BranchPointData> pts = BranchPointsOf(sweep, "test_loss", 3);
//   for (const BranchPointData& p : pts) {
//     BATCHLAB_ASSIGN_OR_RETURN(CbsPoint c, EstimateCbs(p, CbsOptions{.tolerance = 0.01}));
//   }
//   BatchSchedule s = RecommendSchedule(points, /*b0=*/32, /*total_samples=*/65536, 1.0);
#ifndef BATCHLAB_ANALYSIS_ESTIMATORS_CRITICAL_BATCH_BRANCHED_H_
#define BATCHLAB_ANALYSIS_ESTIMATORS_CRITICAL_BATCH_BRANCHED_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analysis/estimators/bootstrap.h"
#include "analysis/data/run_data.h"
#include "base/run_values.h"
#include "base/status.h"

namespace batchlab::analysis {

// One branch run: its k, seed and the smoothed metric's last values (oldest first).
struct BranchRun {
  double multiplier = 0;
  int64_t seed = 0;
  std::vector<double> last_values;
  double lr_factor = 1;  // the branch LR search's factor (branch.lr_factors; 1: the rule's LR)
};

// The branches of one trunk at one point.
struct BranchPointData {
  std::string trunk_id;
  int64_t at_step = 0;
  int64_t at_samples = 0;  // trunk samples seen at the point (tokens: x tokens per sample)
  int64_t trunk_batch = 0;  // B0
  // The branches' node count where it is not the trunk's (a branch study's `nodes`: each count
  // is a point of its own); 0: the trunk's.
  int64_t nodes = 0;
  std::vector<BranchRun> runs;
  // With an LR search per branch batch: each k's chosen factor (the lowest mean loss after Δ);
  // `runs` then holds only the chosen factor's branches. Empty without a search.
  std::map<double, double> lr_factor_by_k;
};

// Keeps, for each k of `point`, only the branches of the LR factor whose mean (over seeds) of the
// smoothed loss is lowest, and records the choice (the LR search per branch batch).
void ChooseBranchLr(BranchPointData* point);

// How the crossing is read: from a monotone fit of the gap curve (the default), or from the raw
// mean gaps' first exceedance of ε (the estimator before issue 34, kept for comparison: skewed
// when the seed noise is near ε, docs/methods.md §10).
enum class CbsMethod { kMonotoneFit, kFirstExceedance };

struct CbsOptions {
  double tolerance = 0.01;  // ε: a loss gap still counted as recovered
  CbsMethod method = CbsMethod::kMonotoneFit;
  int resamples = 2000;
  double confidence = 0.95;
  uint64_t seed = 1;
};

struct CbsPerK {
  double multiplier = 0;
  int64_t batch_size = 0;
  int seeds = 0;
  double loss = 0;  // mean over seeds of the smoothed loss
  Interval gap;     // loss - the smallest k's loss, with its bootstrap interval
};

struct CbsPoint {
  std::string trunk_id;
  int64_t at_step = 0, at_samples = 0, trunk_batch = 0;
  int64_t nodes = 0;           // the branches' node count where not the trunk's; 0: the trunk's
  std::vector<CbsPerK> per_k;  // increasing k
  std::map<double, double> lr_factor_by_k;  // the LR search per branch batch's choice (if any)
  // Merrill's rule (ε = tolerance): a grid batch size; `merrill_censored` when it is the largest.
  int64_t merrill_batch = 0;
  bool merrill_censored = false;
  // The crossing with its interval (batch sizes). censored: no k exceeded the tolerance, the
  // critical batch is >= the largest branch batch (b_crit.value holds that bound);
  // high_open: the interval's upper end is beyond the largest branch batch.
  Interval b_crit;
  bool censored = false;
  bool high_open = false;
  // False with one value per k (one seed, one evaluation): nothing to resample, so low and high
  // are NaN ("unavailable"), never a zero-width interval.
  bool interval_available = true;
  std::string bootstrap;  // "seeds (paired across k) and last evaluations", "last evaluations", ...
  bool paired = false;    // every k ran the same seeds; resampled jointly
  std::vector<double> fitted_gap;  // per k, the curve the crossing is read on (0 for the first)
  std::string reading;    // one sentence from the numbers
};

// FailedPrecondition when the point has fewer than 2 multipliers, or a branch without values.
StatusOr<CbsPoint> EstimateCbs(const BranchPointData& point, const CbsOptions& options);

// The branch points of a sweep: its runs with params branch.* (orchestrator/spec/branch_study.h),
// grouped by trunk, point and (where it differs from the trunk's) node count, each with the last
// `smooth` values of `metric`. Runs that did not finish (failed, cancelled, still running) are
// left out.
std::vector<BranchPointData> BranchPointsOf(const SweepData& sweep, const std::string& metric,
                                            int smooth);

// A batch-size schedule: batch `batches[i]` from `from_samples[i]` on (from_samples[0] == 0).
struct BatchSchedule {
  std::vector<int64_t> from_samples;
  std::vector<int64_t> batches;
  int64_t total_samples = 0;
  int64_t steps = 0;           // over the whole schedule
  int64_t constant_steps = 0;  // at the constant batch b0 for the same samples
  double saving = 0;           // 1 - steps / constant_steps
};

// As the config's batch_schedule (first_batch = batches[0]; the switches after it).
run_values::BatchSchedule ToRunSchedule(const BatchSchedule& s);

// The schedule that follows the measured curve: start at b0 and double the batch at the first
// point whose critical batch size (the lower end of its interval, divided by `margin` >= 1) is at
// least the doubled batch; never decreasing. Points must be sorted by at_samples.
BatchSchedule RecommendSchedule(const std::vector<CbsPoint>& points, int64_t b0,
                                int64_t total_samples, double margin);

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_ESTIMATORS_CRITICAL_BATCH_BRANCHED_H_
