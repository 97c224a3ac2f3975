// The adaptive LR search's rounds (orchestrator/spec/lr_search.h) and its spec syntax: a coarse log
// grid, bracketing refinement around the best by the analysis's rule, a deterministic stop, and
// clear errors naming the field.
#include "orchestrator/spec/lr_search.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "orchestrator/spec/expansion.h"
#include "orchestrator/spec/spec.h"

namespace batchlab::orchestrator {
namespace {

LrSearch Search(double min, double max, int grid, int rounds) {
  LrSearch s;
  s.enabled = true;
  s.min = min;
  s.max = max;
  s.grid = grid;
  s.rounds = rounds;
  return s;
}

TEST(LrSearchTest, CoarseGridIsLogSpacedWithBothEnds) {
  EXPECT_EQ(CoarseGrid(Search(0.001, 1, 4, 2)), (std::vector<double>{0.001, 0.01, 0.1, 1}));
  EXPECT_EQ(CoarseGrid(Search(0.01, 1, 3, 0)), (std::vector<double>{0.01, 0.1, 1}));
  EXPECT_EQ(RoundLr(0.0316227766), 0.03162);
}

TEST(LrSearchTest, StartOrderIsTheCoarseGridFromItsMiddleOutRefinementsFirst) {
  const LrSearch even = Search(0.001, 1, 4, 2);  // 0.001 0.01 0.1 1
  EXPECT_EQ(LrStartRank(even, 0.01), 0);         // equally central: the smaller first
  EXPECT_EQ(LrStartRank(even, 0.1), 1);
  EXPECT_EQ(LrStartRank(even, 0.001), 2);
  EXPECT_EQ(LrStartRank(even, 1), 3);
  EXPECT_EQ(LrStartRank(even, 0.03162), 0);      // a refinement: as soon as it exists
  const LrSearch odd = Search(0.0001, 1, 5, 2);  // 0.0001 0.001 0.01 0.1 1
  EXPECT_EQ(LrStartRank(odd, 0.01), 0);
  EXPECT_EQ(LrStartRank(odd, 0.001), 1);
  EXPECT_EQ(LrStartRank(odd, 0.1), 2);
  EXPECT_EQ(LrStartRank(odd, 0.0001), 3);
  EXPECT_EQ(LrStartRank(odd, 1), 4);
}

TEST(LrSearchTest, BestIsFewestMeanStepsThenTheSmallerLr) {
  EXPECT_EQ(BestLr({{0.1, 300}, {0.01, 200}, {1, std::nullopt}}), 0.01);
  EXPECT_EQ(BestLr({{0.1, 200}, {0.01, 200}}), 0.01);
  EXPECT_FALSE(BestLr({{0.1, std::nullopt}}));
}

TEST(LrSearchTest, RefinesBetweenTheBestAndItsNeighboursThenStops) {
  const LrSearch s = Search(0.001, 1, 4, 2);
  EXPECT_EQ(NextLrs(s, {{0.001, 900}, {0.01, 300}, {0.1, std::nullopt}, {1, std::nullopt}}, 0),
            (std::vector<double>{0.003162, 0.03162}));
  EXPECT_TRUE(
      NextLrs(s, {{0.001, 900}, {0.01, 300}, {0.1, std::nullopt}, {1, std::nullopt}}, 2).empty());
  // At the edge of the range: one side only.
  EXPECT_EQ(NextLrs(s, {{0.001, 100}, {0.01, 300}, {0.1, 400}, {1, std::nullopt}}, 0),
            (std::vector<double>{0.003162}));
  // Nothing reached the target: the search ends (the report says so).
  EXPECT_TRUE(NextLrs(s, {{0.001, std::nullopt}, {1, std::nullopt}}, 0).empty());
}

// Plays the search on a smooth valley (steps = 100 (1 + ln(lr / lr*)^2), lr* = 0.02, and LRs
// above 0.5 never reach the target): the best moves toward lr*, and after `rounds` rounds no LR
// is proposed.
TEST(LrSearchTest, ConvergesTowardTheValleyFloorAndStopsAfterTheRounds) {
  const LrSearch s = Search(0.001, 1, 4, 3);
  auto steps = [](double lr) -> std::optional<double> {
    if (lr > 0.5) return std::nullopt;
    return 100 * (1 + std::pow(std::log(lr / 0.02), 2));
  };
  std::vector<LrResult> tried;
  for (double lr : CoarseGrid(s)) tried.push_back({lr, steps(lr)});
  int rounds = 0;
  for (std::vector<double> next = NextLrs(s, tried, 0); !next.empty();
       next = NextLrs(s, tried, rounds)) {
    ++rounds;
    for (double lr : next) tried.push_back({lr, steps(lr)});
    ASSERT_LE(rounds, 10);
  }
  EXPECT_EQ(rounds, 3);
  const double best = *BestLr(tried);
  // The coarse grid's best (0.01) is a factor 2 from lr* = 0.02; three rounds bring it within
  // the finest bracket, 10^(1/8) = 1.33x.
  EXPECT_LT(std::abs(std::log(best / 0.02)), std::log(1.34));
  EXPECT_LT(std::abs(std::log(best / 0.02)), std::log(2.0) - 0.1);  // better than the grid
  EXPECT_LE(tried.size(), 4u + 2 * 3);
}

StatusOr<Spec> Parse(const std::string& lr_search, const std::string& extra = "") {
  return ParseSpec(R"({"name": "s", "base": {"batch_size": 64, "budget": {"steps": 10},
      "target": {"metric": "test_accuracy", "op": ">=", "value": 0.8}}, )" +
                       extra + R"("lr_search": )" + lr_search + "}",
                   "spec.json");
}

TEST(LrSearchSpecTest, TheCoarseGridBecomesAnAxisOfTheLrPath) {
  auto spec =
      Parse(R"({"min": 0.001, "max": 1, "grid": 4})", R"("axes": {"batch_size": [32, 64]}, )");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_TRUE(spec->lr_search.enabled);
  EXPECT_EQ(spec->lr_search.rounds, 2);
  auto plan = ExpandSpec(*spec, {});
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_EQ(plan->runs.size(), 8u);
  EXPECT_EQ(plan->runs[1].params.at("lr.base"), "0.01");
  // A later round's run: same batch size and seed, another LR, its own id.
  PlannedRun later = WithSweptValue(plan->runs[1], "lr.base", 0.003162, 8);
  EXPECT_NE(later.id, plan->runs[1].id);
  EXPECT_EQ(later.config["lr"]["base"], 0.003162);
  EXPECT_EQ(later.config["run_id"], later.id);
  EXPECT_EQ(later.params.at("lr.base"), "0.003162");
}

TEST(LrSearchSpecTest, BadInputNamesTheField) {
  auto expect_error = [](const StatusOr<Spec>& s, const std::string& part) {
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.status().message().find(part), std::string::npos) << s.status().message();
  };
  expect_error(Parse("0.1"), "lr_search: is not an object");
  expect_error(Parse(R"({"max": 1})"), "lr_search.min: is missing");
  expect_error(Parse(R"({"min": 1, "max": 0.1})"), "lr_search.max: 0.1 is not greater than");
  expect_error(Parse(R"({"min": -1, "max": 1})"), "lr_search.min");
  expect_error(Parse(R"({"min": 0.01, "max": 1, "grid": 1})"), "lr_search.grid");
  expect_error(Parse(R"({"min": 0.01, "max": 1, "rounds": 11})"), "lr_search.rounds");
  expect_error(Parse(R"({"min": 0.01, "max": 1, "step": 2})"), "lr_search.step: unknown field");
  expect_error(Parse(R"({"min": 0.01, "max": 1, "path": "batch_size"})"), "lr_search.path");
  expect_error(Parse(R"({"min": 0.01, "max": 1})", R"("axes": {"lr.base": [0.1]}, )"),
               "already swept");
  auto no_target = ParseSpec(R"({"name": "s", "base": {"batch_size": 64, "budget": {"steps": 1}},
      "lr_search": {"min": 0.01, "max": 1}})",
                             "spec.json");
  expect_error(no_target, "lr_search: needs a target");
}

}  // namespace
}  // namespace batchlab::orchestrator
