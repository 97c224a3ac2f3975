// Time-vs-compute Pareto frontier (see pareto.h): one sort and one sweep, O(n log n).
#include "analysis/estimators/pareto.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace batchlab::analysis {

std::vector<size_t> ParetoFrontier(const std::vector<ParetoPoint>& points) {
  std::vector<size_t> order;
  for (size_t i = 0; i < points.size(); ++i) {
    if (std::isfinite(points[i].time) && std::isfinite(points[i].compute)) order.push_back(i);
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (points[a].time != points[b].time) return points[a].time < points[b].time;
    return points[a].compute < points[b].compute;
  });
  std::vector<size_t> front;
  for (size_t i : order) {
    if (front.empty()) {
      front.push_back(i);
      continue;
    }
    const ParetoPoint& last = points[front.back()];
    const ParetoPoint& p = points[i];
    // Sorted by time: p is dominated unless it needs strictly less compute than every earlier
    // frontier point (the last one has the least), or it duplicates the last one exactly.
    if (p.compute < last.compute || (p.compute == last.compute && p.time == last.time)) {
      front.push_back(i);
    }
  }
  return front;
}

std::vector<ParetoPoint> ParetoPointsOf(const std::vector<TargetHit>& hits, ComputeUnit unit) {
  std::vector<ParetoPoint> out;
  for (const TargetHit& h : hits) {
    if (h.status != HitStatus::kReached) continue;
    out.push_back({h.run_id, h.label, h.seconds, ComputeIn(h, unit)});
  }
  return out;
}

}  // namespace batchlab::analysis
