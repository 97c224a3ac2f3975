// Exact pruning of a branch study (see branch_pruning.h).
#include "orchestrator/plan/branch_pruning.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace batchlab::orchestrator {
namespace {

// The smallest and largest of every value of a complete k; nullopt when it has none or one is
// not finite.
struct Range {
  double low = std::numeric_limits<double>::infinity();
  double high = -std::numeric_limits<double>::infinity();
};
std::optional<Range> RangeOf(const KLosses& k) {
  if (!k.complete || k.seeds.empty()) return std::nullopt;
  Range r;
  for (const std::vector<double>& seed : k.seeds) {
    if (seed.empty()) return std::nullopt;
    for (double v : seed) {
      if (!std::isfinite(v)) return std::nullopt;
      r.low = std::min(r.low, v);
      r.high = std::max(r.high, v);
    }
  }
  return r;
}

}  // namespace

std::optional<double> PrunableAbove(std::vector<KLosses> by_k, double tolerance) {
  if (by_k.size() < 2) return std::nullopt;
  std::sort(by_k.begin(), by_k.end(),
            [](const KLosses& a, const KLosses& b) { return a.k < b.k; });
  const std::optional<Range> smallest = RangeOf(by_k.front());
  if (!smallest) return std::nullopt;
  for (size_t j = 1; j < by_k.size(); ++j) {
    const std::optional<Range> r = RangeOf(by_k[j]);
    if (r && r->low - smallest->high > tolerance) return by_k[j].k;
  }
  return std::nullopt;
}

}  // namespace batchlab::orchestrator
