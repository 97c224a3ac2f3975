// Adaptive LR search (see lr_search.h).
#include "orchestrator/spec/lr_search.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <utility>

#include <fmt/format.h>

namespace batchlab::orchestrator {

double RoundLr(double x) { return std::strtod(fmt::format("{:.4g}", x).c_str(), nullptr); }

std::vector<double> CoarseGrid(const LrSearch& s) {
  std::vector<double> out;
  const double lo = std::log(s.min), hi = std::log(s.max);
  for (int k = 0; k < s.grid; ++k) {
    const double v = RoundLr(std::exp(lo + (hi - lo) * k / (s.grid - 1)));
    if (out.empty() || v != out.back()) out.push_back(v);
  }
  return out;
}

int LrStartRank(const LrSearch& search, double lr) {
  const std::vector<double> grid = CoarseGrid(search);
  const auto at = std::find(grid.begin(), grid.end(), lr);
  if (at == grid.end()) return 0;
  // Twice the distance from the middle index (integers), then the smaller LR first.
  const auto n = static_cast<int>(grid.size());
  auto key = [n](int k) { return std::make_pair(std::abs(2 * k - (n - 1)), k); };
  const int k = static_cast<int>(at - grid.begin());
  int rank = 0;
  for (int j = 0; j < n; ++j) rank += key(j) < key(k);
  return rank;
}

std::optional<double> BestLr(const std::vector<LrResult>& tried) {
  std::optional<LrResult> best;
  for (const LrResult& r : tried) {
    if (!r.steps) continue;
    if (!best || *r.steps < *best->steps || (*r.steps == *best->steps && r.lr < best->lr)) {
      best = r;
    }
  }
  if (!best) return std::nullopt;
  return best->lr;
}

std::vector<double> NextLrs(const LrSearch& s, const std::vector<LrResult>& tried,
                            int rounds_done) {
  if (rounds_done >= s.rounds) return {};
  const std::optional<double> best = BestLr(tried);
  if (!best) return {};
  std::vector<double> lrs;
  for (const LrResult& r : tried) lrs.push_back(r.lr);
  std::sort(lrs.begin(), lrs.end());
  const auto at = std::lower_bound(lrs.begin(), lrs.end(), *best);
  std::vector<double> out;
  auto propose = [&](double neighbour) {
    const double mid = RoundLr(std::sqrt(*best * neighbour));
    if (std::find(lrs.begin(), lrs.end(), mid) == lrs.end() &&
        std::find(out.begin(), out.end(), mid) == out.end()) {
      out.push_back(mid);
    }
  };
  if (at != lrs.begin()) propose(*(at - 1));
  if (at + 1 != lrs.end()) propose(*(at + 1));
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace batchlab::orchestrator
