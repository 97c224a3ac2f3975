// Adaptive learning-rate search per batch size (docs/spec.md "LR search"): instead of a fixed LR
// grid, a spec gives a range; every batch size (with every other swept value) first tries a
// coarse log grid over it, then refines by bracketing around the best LR so far — the geometric
// midpoints between the best and its nearest tried neighbours — for `rounds` rounds. "Best" is the
// analysis's rule (analysis/estimators/steps_to_target.h): fewest mean steps to target over seeds, counting
// only LRs whose seeds all reached it; ties go to the smaller LR. Round k halves the bracket while
// the best stays put (a point costs at most grid + 2 x rounds LRs). This follows the per-batch-size
// tuning of Shallue et al. (2018), arXiv:1811.03600, §3, which also refines the grid around the
// best point.
//
// Everything is a pure function of the LRs tried and their results, so a resumed sweep
// re-derives the same search from the database.
//
//   LrSearch s{.enabled = true, .min = 0.001, .max = 1, .grid = 4, .rounds = 2};
//   CoarseGrid(s);                                  // 0.001, 0.01, 0.1, 1
//   NextLrs(s, {{0.001, 900}, {0.01, 300}, {0.1, std::nullopt}, {1, std::nullopt}}, 0);
//                                                  // 0.003162, 0.03162
#ifndef BATCHLAB_ORCHESTRATOR_SPEC_LR_SEARCH_H_
#define BATCHLAB_ORCHESTRATOR_SPEC_LR_SEARCH_H_

#include <optional>
#include <string>
#include <vector>

namespace batchlab::orchestrator {

struct LrSearch {
  bool enabled = false;
  std::string path = "lr.base";  // the config field searched
  double min = 0, max = 0;       // the range, 0 < min < max
  int grid = 5;                  // coarse log-grid points, both ends included (2..50)
  int rounds = 2;                // bracketing refinements (0..10)
};

// One LR tried at one search point: mean steps to target over its seeds, when all reached it.
struct LrResult {
  double lr = 0;
  std::optional<double> steps;
};

// `grid` log-spaced values from min to max, each rounded to 4 significant digits.
std::vector<double> CoarseGrid(const LrSearch& search);

// The best LR tried (fewest mean steps; ties: the smaller LR); nullopt when none reached.
std::optional<double> BestLr(const std::vector<LrResult>& tried);

// The LRs of refinement round `rounds_done + 1`, given every LR tried so far with its result
// (all finished): the midpoints between the best and its nearest tried neighbours (1 or 2; none
// that was tried). Empty: the search is done (`rounds` rounds, or nothing reached the target).
std::vector<double> NextLrs(const LrSearch& search, const std::vector<LrResult>& tried,
                            int rounds_done);

// The start order of `lr` among the runs of its search point (lower first): the coarse grid from
// its middle outward (rank 0 = the middle LR of the log range; of two equally central, the
// smaller first), its two ends last; an LR outside the grid (a refinement) 0. A range is chosen
// to bracket the best LR, so its middle is where the best most likely lies and its ends where it
// least likely does — and the ends' runs are the dear ones: too small an LR is slow, too large
// an LR may neither diverge nor reach the target, and without a bar both run to their budget.
// Started last, they usually find the point's best known and pruning stops them at its steps.
// Only the order changes: the runs, the best LR and the search's path are the same in any order.
int LrStartRank(const LrSearch& search, double lr);

// x rounded to 4 significant digits (the LR values written into configs, so ids are stable).
double RoundLr(double x);

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_SPEC_LR_SEARCH_H_
