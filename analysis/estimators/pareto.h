// The Pareto frontier of wall time against compute: the points no other point beats on both.
//
// A point p dominates q when p.time <= q.time and p.compute <= q.compute with at least one
// strict. The frontier is the set of non-dominated points, returned in frontier order
// (increasing time, hence decreasing compute). Points with a non-finite coordinate are never on
// it. Compute is in one unit per frontier: FLOPs or rank-seconds (compute_unit.h, docs/methods.md
// §4).
//
//   std::vector<ParetoPoint> pts = {{"a", "B=64 K=1", 10, 10}, {"b", "B=256 K=2", 6, 12},
//                                    {"c", "B=256 K=1", 12, 12}};
//   std::vector<size_t> front = ParetoFrontier(pts);  // {1, 0}: "c" is dominated by "a"
#ifndef BATCHLAB_ANALYSIS_ESTIMATORS_PARETO_H_
#define BATCHLAB_ANALYSIS_ESTIMATORS_PARETO_H_

#include <string>
#include <vector>

#include "analysis/estimators/compute_unit.h"
#include "analysis/estimators/steps_to_target.h"

namespace batchlab::analysis {

struct ParetoPoint {
  std::string id;
  std::string label;
  double time = 0;     // seconds to target
  double compute = 0;  // compute to target, in the frontier's one unit (FLOPs or rank-seconds)
};

// Indices into `points` of the frontier, in increasing time. Exact duplicates are all kept.
std::vector<size_t> ParetoFrontier(const std::vector<ParetoPoint>& points);

// The runs that reached the target, as points (time = seconds, compute = ComputeIn(hit, unit)).
std::vector<ParetoPoint> ParetoPointsOf(const std::vector<TargetHit>& hits, ComputeUnit unit);

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_ESTIMATORS_PARETO_H_
