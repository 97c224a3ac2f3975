// Exact pruning of a branch study (docs/spec.md, "Branch study"): the branches of one point that
// can no longer change what `batchlab analyze cbs` reports there, given the branches that have
// finished.
//
// The analysis (docs/methods.md §10) compares each multiplier k's loss after Δ (the mean of a
// branch's last `smooth_evals` evaluations, averaged over seeds) with the smallest k's; its
// critical batch size is where the gap first passes the tolerance ε, its interval a bootstrap
// that resamples seeds and, within them, those last evaluations, and Merrill's rule the largest
// k before the first gap above ε. Every such mean lies between the smallest and the largest value
// it averages. So once some k_j (all of its seeds finished) has
//     min over its seeds' values  -  max over the smallest k's seeds' values  >  ε,
// k_j's gap passes ε in every bootstrap replicate and in the point estimate: nothing above k_j is
// ever read. Exact for the spec's tolerance and smooth_evals; an analysis run later with a larger
// --tolerance or --smooth may want a pruned k (it reports it as pruned, not as a value).
//
//   std::vector<KLosses> ks = {{1, {{0.61, 0.60}, {0.62, 0.61}}, true}, {2, {...}, true}, ...};
//   std::optional<double> above = PrunableAbove(ks, /*tolerance=*/0.01);  // prune every k > *above
#ifndef BATCHLAB_ORCHESTRATOR_PLAN_BRANCH_PRUNING_H_
#define BATCHLAB_ORCHESTRATOR_PLAN_BRANCH_PRUNING_H_

#include <optional>
#include <vector>

namespace batchlab::orchestrator {

// One multiplier of one branch point: each finished seed's last values of the metric.
struct KLosses {
  double k = 0;
  std::vector<std::vector<double>> seeds;  // finished seeds only
  bool complete = false;                   // every seed of this k finished (and is in `seeds`)
};

// The smallest k whose gap passes `tolerance` in every resample, when the smallest k and it are
// complete: every branch with a larger k may be pruned. nullopt: nothing can be pruned yet.
// `by_k` in any order; a k with no values or a non-finite value decides nothing.
std::optional<double> PrunableAbove(std::vector<KLosses> by_k, double tolerance);

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_PLAN_BRANCH_PRUNING_H_
