// The study sections on in-memory sweeps: the GNS window (--at-step), the median over runs, and
// the critical-batch section fed by the target section.
#include "analysis/sections/study.h"

#include <gtest/gtest.h>

#include "tests/support/noisy_quadratic.h"

namespace batchlab::analysis {
namespace {

RunData GnsRun(const std::string& id, uint64_t seed, int steps) {
  testing::NoisyQuadratic nqm(50, 40.0, seed);
  RunData r;
  r.id = id;
  r.batch_size = 128;
  r.world_size = 4;
  r.params = {{"batch_size", "128"}, {"seed", std::to_string(seed)}};
  for (int s = 1; s <= steps; ++s) {
    GnsSample g = nqm.Sample(s, 32, 4);
    for (const auto& [name, v] : {std::pair<const char*, double>{"gns_b_small", g.b_small},
                                  {"gns_b_big", g.b_big},
                                  {"gns_sq_small", g.sq_small},
                                  {"gns_sq_big", g.sq_big}}) {
      r.metrics[name].steps.push_back(s);
      r.metrics[name].values.push_back(v);
    }
  }
  return r;
}

TEST(StudyGnsTest, AtStepUsesTheEmaMemoryEndingThere) {
  StudyOptions o;
  o.beta = 0.9;  // memory ceil(1 / 0.1) = 10 steps
  o.at_step = 50;
  EXPECT_EQ(GnsWindow(o), (std::pair<int64_t, int64_t>(41, 50)));
  o.at_step = 3;
  EXPECT_EQ(GnsWindow(o), (std::pair<int64_t, int64_t>(0, 3)));

  SweepData sweep;
  sweep.runs.push_back(GnsRun("a", 1, 200));
  o.at_step = 150;
  o.resamples = 50;
  GnsSection g = AnalyzeGns(sweep, o);
  ASSERT_EQ(g.runs.size(), 1u);
  ASSERT_TRUE(g.runs[0].status.ok()) << g.runs[0].status.message();
  EXPECT_EQ(g.runs[0].estimate.first_step, 141);
  EXPECT_EQ(g.runs[0].estimate.last_step, 150);
  ASSERT_TRUE(g.runs[0].smoothed_end.has_value());
  EXPECT_EQ(g.runs[0].smoothed_end->step, 150);
  EXPECT_EQ(g.runs[0].series.size(), 200u);  // the series always covers the whole run
}

TEST(StudyGnsTest, MedianAndSeedSpreadOverManyRunsIndependentOfThreads) {
  SweepData sweep;
  for (int i = 0; i < 200; ++i) sweep.runs.push_back(GnsRun("r" + std::to_string(i), i + 1, 300));
  StudyOptions o;
  o.resamples = 100;
  GnsSection g = AnalyzeGns(sweep, o);
  ASSERT_EQ(g.runs.size(), 200u);
  const double truth = testing::NoisyQuadratic(50, 40.0, 1).TrueBSimple();
  ASSERT_TRUE(g.median.has_value());
  EXPECT_NEAR(*g.median, truth, 0.1 * truth);
  EXPECT_LE(*g.min, *g.median);
  EXPECT_GE(*g.max, *g.median);
  // All 200 runs share the config apart from the seed: one spread over 200 seeds.
  ASSERT_EQ(g.seeds.size(), 1u);
  EXPECT_EQ(g.seeds[0].spread.n, 200);
  // Runs are processed in parallel; each result must equal the one computed alone.
  SweepData one;
  one.runs.push_back(sweep.runs[137]);
  GnsSection single = AnalyzeGns(one, o);
  EXPECT_EQ(single.runs[0].estimate.b_simple.value, g.runs[137].estimate.b_simple.value);
  EXPECT_EQ(single.runs[0].estimate.b_simple.low, g.runs[137].estimate.b_simple.low);
}

TEST(StudyCritTest, FitFromTheTargetSectionAndRatioToBSimple) {
  TargetSection t;
  t.target = *ParseTarget("test_accuracy>=0.9");
  for (int64_t b : {32, 64, 128, 256, 512}) {
    TargetHit h;
    h.run_id = std::to_string(b);
    h.batch_size = b;
    h.status = HitStatus::kReached;
    h.step = static_cast<int64_t>(50 * (1 + 100.0 / static_cast<double>(b)));
    t.hits.push_back(h);
  }
  t.best = BestPerBatchSize(t.hits);
  GnsSection g;
  g.median = 50;
  CritSection c = AnalyzeCrit(t, g, StudyOptions{});
  ASSERT_TRUE(c.status.ok()) << c.status.message();
  EXPECT_NEAR(c.fit.b_crit.value, 100, 5);
  ASSERT_TRUE(c.b_simple_ratio.has_value());
  EXPECT_NEAR(*c.b_simple_ratio, 50 / c.fit.b_crit.value, 1e-12);
  ASSERT_EQ(c.regions.size(), 5u);
  EXPECT_EQ(c.regions[0].region, Region::kDiminishingReturns);

  TargetSection empty;
  CritSection none = AnalyzeCrit(empty, g, StudyOptions{});
  EXPECT_FALSE(none.status.ok());
}

}  // namespace
}  // namespace batchlab::analysis
