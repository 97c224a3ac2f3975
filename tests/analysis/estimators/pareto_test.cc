// Pareto frontier on a hand-checkable set.
#include "analysis/estimators/pareto.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace batchlab::analysis {
namespace {

TEST(ParetoTest, HandCheckedFrontier) {
  //   id  time compute
  //   a    10    10    frontier (least compute)
  //   b     6    12    frontier
  //   c    12    12    dominated by a
  //   d     3    40    frontier (fastest)
  //   e     6    15    dominated by b (same time, more compute)
  //   f     8    11    frontier
  //   g     9    11    dominated by f
  std::vector<ParetoPoint> pts = {{"a", "", 10, 10}, {"b", "", 6, 12}, {"c", "", 12, 12},
                                  {"d", "", 3, 40},  {"e", "", 6, 15}, {"f", "", 8, 11},
                                  {"g", "", 9, 11}};
  std::vector<size_t> front = ParetoFrontier(pts);
  std::vector<std::string> ids;
  for (size_t i : front) ids.push_back(pts[i].id);
  EXPECT_EQ(ids, (std::vector<std::string>{"d", "b", "f", "a"}));
}

TEST(ParetoTest, FrontierIsExactlyTheNonDominatedSet) {
  // Brute force on a grid with ties against the O(n log n) sweep.
  std::vector<ParetoPoint> pts;
  for (int i = 0; i < 60; ++i) {
    pts.push_back({std::to_string(i), "", static_cast<double>((i * 37) % 11),
                   static_cast<double>((i * 53) % 13)});
  }
  std::vector<size_t> front = ParetoFrontier(pts);
  std::vector<bool> on(pts.size(), false);
  for (size_t i : front) on[i] = true;
  for (size_t i = 0; i < pts.size(); ++i) {
    bool dominated = false;
    for (size_t j = 0; j < pts.size(); ++j) {
      const bool le = pts[j].time <= pts[i].time && pts[j].compute <= pts[i].compute;
      const bool lt = pts[j].time < pts[i].time || pts[j].compute < pts[i].compute;
      dominated = dominated || (le && lt);
    }
    EXPECT_EQ(on[i], !dominated) << "point " << i;
  }
  for (size_t k = 1; k < front.size(); ++k) {
    EXPECT_LE(pts[front[k - 1]].time, pts[front[k]].time);
    EXPECT_GE(pts[front[k - 1]].compute, pts[front[k]].compute);
  }
}

TEST(ParetoTest, NonFinitePointsAreNeverOnTheFrontier) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<ParetoPoint> pts = {{"a", "", 5, 5}, {"b", "", std::nan(""), 1}, {"c", "", 1, inf}};
  EXPECT_EQ(ParetoFrontier(pts), (std::vector<size_t>{0}));
  EXPECT_TRUE(ParetoFrontier({}).empty());
}

TEST(ParetoTest, PointsOfHitsKeepOnlyReachedRuns) {
  TargetHit reached;
  reached.run_id = "r1";
  reached.status = HitStatus::kReached;
  reached.seconds = 4;
  reached.compute = 8;
  TargetHit diverged;
  diverged.run_id = "r2";
  diverged.status = HitStatus::kDiverged;
  std::vector<ParetoPoint> pts = ParetoPointsOf({reached, diverged}, ComputeUnit::kRankSeconds);
  ASSERT_EQ(pts.size(), 1u);
  EXPECT_EQ(pts[0].id, "r1");
  EXPECT_EQ(pts[0].compute, 8);
}

}  // namespace
}  // namespace batchlab::analysis
