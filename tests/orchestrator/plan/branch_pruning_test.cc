// orchestrator/plan/branch_pruning.h: when the branches above some k can no longer change the branch
// analysis. The rule's claim is checked against the analysis itself: for random branch losses,
// whenever PrunableAbove says k*, the analysis of every point (its estimate, interval and
// Merrill's rule) is the same with the branches above k* removed.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "analysis/estimators/critical_batch_branched.h"
#include "orchestrator/plan/branch_pruning.h"

namespace batchlab::orchestrator {
namespace {

TEST(BranchPruningTest, AGapBeyondTheToleranceInEveryResamplePrunesTheLargerK) {
  std::vector<KLosses> ks = {
      {4, {{0.70, 0.72}, {0.69, 0.71}}, true},
      {1, {{0.60, 0.61}, {0.62, 0.60}}, true},  // order does not matter
      {2, {{0.63, 0.62}, {0.62, 0.64}}, true},  // 0.62 - 0.62 = 0: within 0.01
      {8, {{0.9}}, false},
  };
  EXPECT_EQ(PrunableAbove(ks, 0.01), 4.0);  // 0.69 - 0.62 = 0.07 > 0.01
  EXPECT_EQ(PrunableAbove(ks, 0.08), std::nullopt);
  // The smallest k still running: nothing is known yet.
  ks[1].complete = false;
  EXPECT_EQ(PrunableAbove(ks, 0.01), std::nullopt);
  ks[1].complete = true;
  // One seed of k = 4 close to the smallest k's: not every resample passes, so not k = 4.
  ks[0].seeds.push_back({0.625});
  EXPECT_EQ(PrunableAbove(ks, 0.01), std::nullopt);
  // A non-finite value decides nothing.
  ks[0].seeds = {{std::numeric_limits<double>::quiet_NaN()}};
  EXPECT_EQ(PrunableAbove(ks, 0.01), std::nullopt);
}

// The claim, against the analysis: random points whose gaps grow with k with seed noise near
// the tolerance; wherever the rule prunes, dropping those branches changes nothing reported.
TEST(BranchPruningTest, PruningNeverChangesWhatTheAnalysisReports) {
  std::mt19937_64 gen(11);
  std::normal_distribution<double> noise(0, 1);
  const double tolerance = 0.01;
  const std::vector<double> ks = {1, 2, 4, 8, 16, 32};
  int pruned_points = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const double slope = 0.002 + 0.02 * (trial % 10) / 10.0, spread = 0.002 + 0.006 * (trial % 3);
    analysis::BranchPointData full;
    full.trunk_id = "t";
    full.at_step = 10;
    full.at_samples = 160;
    full.trunk_batch = 16;
    std::vector<KLosses> by_k;
    for (double k : ks) {
      KLosses kl{k, {}, true};
      for (int s = 0; s < 3; ++s) {
        std::vector<double> values;
        for (int e = 0; e < 2; ++e) {
          values.push_back(0.5 + slope * std::log2(k) * std::log2(k) + spread * noise(gen));
        }
        kl.seeds.push_back(values);
        full.runs.push_back({k, s + 1, values});
      }
      by_k.push_back(kl);
    }
    const std::optional<double> above = PrunableAbove(by_k, tolerance);
    if (!above) continue;
    ++pruned_points;
    analysis::BranchPointData kept = full;
    kept.runs.erase(std::remove_if(kept.runs.begin(), kept.runs.end(),
                                   [&](const analysis::BranchRun& b) {
                                     return b.multiplier > *above;
                                   }),
                    kept.runs.end());
    analysis::CbsOptions o;
    o.tolerance = tolerance;
    o.seed = 3;
    o.resamples = 400;
    const StatusOr<analysis::CbsPoint> a = analysis::EstimateCbs(full, o);
    const StatusOr<analysis::CbsPoint> b = analysis::EstimateCbs(kept, o);
    ASSERT_TRUE(a.ok() && b.ok()) << trial;
    ASSERT_EQ(a->censored, b->censored) << trial;
    ASSERT_EQ(a->merrill_batch, b->merrill_batch) << trial;
    ASSERT_EQ(a->b_crit.value, b->b_crit.value) << trial;
    ASSERT_EQ(a->b_crit.low, b->b_crit.low) << trial;
    ASSERT_EQ(a->b_crit.high, b->b_crit.high) << trial;
    ASSERT_EQ(a->high_open, b->high_open) << trial;
  }
  EXPECT_GT(pruned_points, 50);  // the rule does prune on most of these problems
}

}  // namespace
}  // namespace batchlab::orchestrator
