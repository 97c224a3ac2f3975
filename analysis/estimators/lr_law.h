// The learning-rate law, measured (docs/methods.md §11): from a study that tried several LRs at
// several batch sizes, the best LR per batch size with an interval, a power-law fit
// η_opt = c·B^α with α's interval, compared with the linear (α = 1, Goyal et al. 2017) and
// square-root (α = ½, Krizhevsky 2014; Hoffer et al. 2017) rules, and a peak flagged where the
// best LR falls again as the batch grows (the Adam "surge", Li et al. 2024). Porian et al. 2024
// and Bergsma et al. 2025 ("Power lines") fit such power laws to swept optima.
//
// Per batch size, each LR's score is its mean over seeds of the steps to the target (Shallue et
// al. 2018: the best LR is the one reaching the target in the fewest steps; an LR with a seed
// that missed it scores +inf). A pruned seed is a censored observation: its steps are at least
// the step it was stopped after, so its LR's mean is a lower bound — the bound exact pruning
// proved greater than another configuration's mean — and the LR never wins on a seed that
// pruning stopped (docs/methods.md §11). The best LR is the vertex of the parabola in log η through the
// grid's best and its two neighbours (parabolic interpolation, Press et al., Numerical Recipes
// §10.3); when a neighbour is missing or missed the target, it is the grid's best and the LR grid's
// resolution is its uncertainty (the cell between the midpoints, in log η, to its neighbours);
// the smallest or largest LR tried is "at the edge", open on that side, and left out of the fit.
// The interval is a percentile bootstrap (Efron & Tibshirani 1993): each (batch, LR)'s seeds
// resampled, the vertex recomputed, a cell draw uniform in log η; with one seed per LR only the
// grid's resolution is left (the cell).
//
//   std::vector<LrTrial> trials = LrTrialsOf(sweep.runs, target.hits, target.target, "lr.base");
//   BATCHLAB_ASSIGN_OR_RETURN(std::vector<LrLaw> laws, EstimateLrLaws(trials, LrLawOptions{}));
//   for (const LrLaw& law : laws) fmt::print("{}\n", law.reading);
#ifndef BATCHLAB_ANALYSIS_ESTIMATORS_LR_LAW_H_
#define BATCHLAB_ANALYSIS_ESTIMATORS_LR_LAW_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/data/run_data.h"
#include "analysis/estimators/bootstrap.h"
#include "analysis/estimators/steps_to_target.h"
#include "base/status.h"

namespace batchlab::analysis {

// One finished run: its batch size, LR, seed and steps to the target (+inf: finished without
// reaching it, or diverged). `others`: the other swept values; one law per distinct value.
struct LrTrial {
  std::string others;
  int64_t batch_size = 0;
  double lr = 0;
  int64_t seed = 0;
  double steps = 0;
  // Pruned: `steps` is a lower bound (its target metric's last logged step + 1, 0 if none):
  // the run stopped before the target, which it would have met later if at all.
  bool censored = false;
};

// The finished runs of `runs` with their LR at param `path` (e.g. "lr.base"); `hits` are
// FindTargetHits(runs, target) in run order. Pruned runs are censored trials; unfinished,
// failed and stalled runs are left out.
std::vector<LrTrial> LrTrialsOf(const std::vector<RunData>& runs,
                                const std::vector<TargetHit>& hits, const Target& target,
                                const std::string& path);

struct LrLawOptions {
  int resamples = 2000;
  double confidence = 0.95;
  uint64_t seed = 1;
};

struct BestLr {
  int64_t batch_size = 0;
  int lrs = 0;    // distinct LRs tried
  int seeds = 0;  // the fewest seeds of an LR at this batch (pruned ones included)
  int pruned = 0;  // seeds at this batch that were pruned (censored: steps at least their bound)
  bool reached = false;  // some LR reached the target with every seed
  double grid_lr = 0;    // the grid's best
  double best_steps = 0;
  // The grid's best scores a lower bound (a pruned seed) below every LR whose seeds all reached
  // the target: pruning compared it with a configuration outside this law's group, so it may or
  // may not be the best here. Its interval then also holds the best complete LR's cell, and it
  // is left out of the fit.
  bool censored = false;
  Interval lr;           // the interpolated best LR and its interval
  bool interpolated = false;  // the parabola's vertex (else the grid's best)
  bool at_low_edge = false, at_high_edge = false;  // the smallest / largest LR tried
};

struct LrLaw {
  std::string others;
  std::vector<BestLr> per_batch;  // increasing batch
  // The power law over the batches with an interior best LR (up to the peak, with one).
  bool fitted = false;
  int fit_points = 0;
  double c = 0;    // η_opt = c·B^α
  Interval alpha;  // unavailable with fewer than 3 points
  bool linear_consistent = false;  // α = 1 inside α's interval
  bool sqrt_consistent = false;    // α = ½ inside it
  // The surge: the best LR at a larger batch lies below the peak's, their intervals apart.
  bool peak = false;
  int64_t peak_batch = 0;
  std::string reading;
  // The law's LR at `batch` (c·B^α); nullopt without a fit or outside the fitted batches' range
  // past a peak.
  std::optional<double> LrAt(int64_t batch) const;
};

// One law per `others` value. InvalidArgument when no trial is given; a law with too few batch
// sizes says so in its reading (fitted false).
StatusOr<std::vector<LrLaw>> EstimateLrLaws(const std::vector<LrTrial>& trials,
                                            const LrLawOptions& options);

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_ESTIMATORS_LR_LAW_H_
