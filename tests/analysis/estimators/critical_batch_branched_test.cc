// The critical batch size over training (analysis/estimators/critical_batch_branched.h) against
// a noisy quadratic model whose expected loss after Δ samples at any batch, from a given trunk
// state, is known in closed form (Zhang et al. 2019's NQM: loss ½ Σ h_i x_i², per-example
// gradient noise of covariance cH; tests/support/noisy_quadratic.h). The trunk trains at B0; at
// each branch point, branches at k x B0 (LR linear in k) train the same Δ samples, several seeds
// each; the estimator must land within ±15% of the true crossing of the tolerance (the expected
// gaps at the same grid, interpolated the same way) with the truth inside its interval, at every
// point of three noise levels, and report "≥ largest" (censored) when no branch falls behind.
//
// The 200-repetition measurement of docs/methods.md §10 (coverage per point, old estimator beside
// the new):
//   BATCHLAB_CBS_MEASURE=200 build/tests/analysis/analysis_tests
//       --gtest_filter='BranchCbs.Measure*'
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <vector>

#include "analysis/estimators/critical_batch_branched.h"
#include "tests/support/noisy_quadratic.h"

namespace batchlab::analysis {
namespace {

using testing::NqmBranches;

// Three noise levels: the per-seed sd of a branch's smoothed loss near the crossing is about
// 2-4 ε today (c = 50, ε = 0.05), 0.05-0.25 ε far below (c = 0.05, ε = 0.02) and about 20 ε
// far above (c = 500, ε = 0.05). Seeds paired across k (the runner's data order). Far above ε,
// 128 seeds do not determine the crossing to ±15% (docs/methods.md §10: the paired gaps' standard
// error there is comparable to the gaps themselves); the test asks there only for the truth
// inside the interval.
struct Setting {
  const char* name;
  double noise, tolerance;
  int seeds;
  bool within15;  // ±15% expected at every point
};
const Setting kSettings[] = {
    {"today (c = 50, eps = 0.05)", 50, 0.05, 128, true},
    {"noise far below eps (c = 0.05, eps = 0.02)", 0.05, 0.02, 32, true},
    {"noise far above eps (c = 500, eps = 0.05)", 500, 0.05, 128, false},
};
const int64_t kPoints[] = {20, 100, 400, 1600};

NqmBranches Model(const Setting& s, bool paired = true) {
  NqmBranches::Config c;
  c.noise = s.noise;
  c.paired = paired;
  return NqmBranches(c);
}

CbsOptions Options(double tol, int resamples, double confidence,
                   CbsMethod method = CbsMethod::kMonotoneFit) {
  CbsOptions o;
  o.tolerance = tol;
  o.resamples = resamples;
  o.confidence = confidence;
  o.method = method;
  return o;
}

TEST(BranchCbs, LandsWithin15PercentOfTheTruthAtEveryPointWithTheTruthInItsInterval) {
  for (const Setting& set : kSettings) {
    const NqmBranches nqm = Model(set);
    std::vector<CbsPoint> points;
    for (int64_t at : kPoints) {
      SCOPED_TRACE(std::string(set.name) + ", branch point at trunk step " + std::to_string(at));
      const std::vector<double> x0 = nqm.Trunk(at, 11);
      const double truth = nqm.TrueCrossing(x0, set.tolerance);
      const BranchPointData data = nqm.Simulate(x0, at, set.seeds, 100 + static_cast<uint64_t>(at));
      auto c = EstimateCbs(data, Options(set.tolerance, 1000, 0.95));
      auto old = EstimateCbs(data, Options(set.tolerance, 1000, 0.95, CbsMethod::kFirstExceedance));
      ASSERT_TRUE(c.ok() && old.ok()) << c.status().message();
      std::printf("%s step %ld: truth %.4g | new %.4g [%.4g, %.4g] | old %.4g [%.4g, %.4g]\n",
                  set.name, static_cast<long>(at), truth, c->b_crit.value, c->b_crit.low,
                  c->b_crit.high, old->b_crit.value, old->b_crit.low, old->b_crit.high);
      EXPECT_TRUE(c->paired);
      EXPECT_EQ(c->per_k.size(), nqm.config().ks.size());
      if (!std::isfinite(truth)) {  // no expected gap passes ε: "≥ the largest batch"
        EXPECT_TRUE(c->censored);
        continue;
      }
      EXPECT_FALSE(c->censored);
      if (set.within15) {
        EXPECT_NEAR(c->b_crit.value / truth, 1.0, 0.15);
      }
      EXPECT_LE(c->b_crit.low, truth);
      EXPECT_GE(c->b_crit.high, truth);
      EXPECT_LT(c->b_crit.low, c->b_crit.high);  // an interval, not a point
      points.push_back(*c);
    }
    // The curve rises over training (Merrill et al.: near 0 at the start, then growing).
    ASSERT_GE(points.size(), 2u);
    if (set.within15) {
      EXPECT_LT(points.front().b_crit.value, points.back().b_crit.value) << set.name;
    }
  }
}

// Coverage of the 95% interval and the estimate's spread over independent repetitions (fresh
// branch noise, the same trunk state) at one point.
struct Repeated {
  int reps = 0, covered = 0, within15 = 0, old_within15 = 0;
  double median_ratio = 0, old_median_ratio = 0, median_width = 0;
};
Repeated Repeat(const Setting& set, int64_t at, int reps, int resamples, bool paired = true) {
  const NqmBranches nqm = Model(set, paired);
  const std::vector<double> x0 = nqm.Trunk(at, 11);
  const double truth = nqm.TrueCrossing(x0, set.tolerance);
  Repeated out;
  std::vector<double> ratios, old_ratios, widths;
  for (int r = 0; r < reps; ++r) {
    const BranchPointData data =
        nqm.Simulate(x0, at, set.seeds, 5000 + 7919 * static_cast<uint64_t>(r));
    auto c = EstimateCbs(data, Options(set.tolerance, resamples, 0.95));
    auto old = EstimateCbs(data, Options(set.tolerance, 1, 0.95, CbsMethod::kFirstExceedance));
    if (!c.ok() || !old.ok()) continue;
    ++out.reps;
    const double v = c->censored ? INFINITY : c->b_crit.value;
    const double o = old->censored ? INFINITY : old->b_crit.value;
    if (!std::isfinite(truth)) {
      out.covered += c->censored ? 1 : 0;
      continue;
    }
    out.covered += c->b_crit.Contains(truth) && !c->censored ? 1 : 0;
    out.within15 += std::abs(v / truth - 1) <= 0.15 ? 1 : 0;
    out.old_within15 += std::abs(o / truth - 1) <= 0.15 ? 1 : 0;
    ratios.push_back(v / truth);
    old_ratios.push_back(o / truth);
    widths.push_back((c->b_crit.high - c->b_crit.low) / truth);
  }
  auto median = [](std::vector<double> v) -> double {
    if (v.empty()) return NAN;
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  out.median_ratio = median(ratios);
  out.old_median_ratio = median(old_ratios);
  out.median_width = median(widths);
  return out;
}

// 60 repetitions at step 100 of today's setting: a nominal 95% interval covering the truth in at
// least 53 (88%) — an interval with 80% coverage passes this with probability about 5%, one with
// 95% fails it with about 1% — and not by being vacuous (median width under the truth itself).
TEST(BranchCbs, ItsIntervalCoversTheTruthAtAboutItsConfidence) {
  const Repeated r = Repeat(kSettings[0], 100, 60, 400);
  std::printf("covered %d of %d, within 15%%: %d, median width / truth %.3g\n", r.covered, r.reps,
              r.within15, r.median_width);
  ASSERT_EQ(r.reps, 60);
  EXPECT_GE(r.covered, 53);
  EXPECT_LT(r.median_width, 1.0);
}

// The measurement behind docs/methods.md §10 (minutes; skipped unless BATCHLAB_CBS_MEASURE is set
// to the repetitions per point, e.g. 200).
TEST(BranchCbs, MeasureCoveragePerPoint) {
  const char* env = std::getenv("BATCHLAB_CBS_MEASURE");
  if (env == nullptr) GTEST_SKIP() << "set BATCHLAB_CBS_MEASURE=<repetitions> to measure";
  const int reps = std::atoi(env);
  for (bool paired : {true, false}) {
    for (const Setting& set : kSettings) {
      for (int64_t at : kPoints) {
        const Repeated r = Repeat(set, at, reps, 1000, paired);
        std::printf(
            "%s | %s | step %ld | coverage %d/%d | within 15%%: new %d old %d | median est/truth: "
            "new %.3f old %.3f | median width/truth %.3f\n",
            paired ? "paired" : "unpaired", set.name, static_cast<long>(at), r.covered, r.reps,
            r.within15, r.old_within15, r.median_ratio, r.old_median_ratio, r.median_width);
        std::fflush(stdout);
      }
    }
  }
}

TEST(BranchCbs, WhenEvenTheLargestBatchRecoversItIsCensoredNeverANumber) {
  const NqmBranches nqm = Model(kSettings[0]);
  const std::vector<double> x0 = nqm.Trunk(400, 11);
  CbsOptions opt;
  opt.tolerance = 1e3;  // no branch can fall this far behind
  opt.resamples = 200;
  auto c = EstimateCbs(nqm.Simulate(x0, 400, 4, 7), opt);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->censored);
  EXPECT_TRUE(c->merrill_censored);
  EXPECT_EQ(c->b_crit.value, 64 * 8);  // the bound, flagged as such
  EXPECT_NE(c->reading.find("at least"), std::string::npos) << c->reading;
}

TEST(BranchCbs, MerrillsRuleIsTheLargestGridBatchWithinEpsilon) {
  BranchPointData p;
  p.at_step = 10;
  p.at_samples = 80;
  p.trunk_batch = 8;
  auto add = [&](double k, double loss) { p.runs.push_back({k, 1, {loss}}); };
  add(1, 1.00);
  add(2, 1.005);
  add(4, 1.02);  // passes ε = 0.01 here
  add(8, 1.004);  // within ε again, but after a failure: not counted
  CbsOptions opt;
  opt.tolerance = 0.01;
  opt.resamples = 50;
  auto c = EstimateCbs(p, opt);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->merrill_batch, 16);
  EXPECT_FALSE(c->merrill_censored);
  // The crossing lies between 2 and 4 x B0, in log k: gap 0.005 -> 0.02, ε at a third.
  EXPECT_NEAR(c->b_crit.value, 8 * std::exp(std::log(2.0) + (1.0 / 3) * std::log(2.0)), 1e-9);
}

// The LR search per branch batch: each k keeps the factor with the lowest mean loss over its
// seeds, and only that factor's branches go into the estimate.
TEST(BranchCbs, TheLrSearchKeepsEachKsBestFactor) {
  BranchPointData p;
  p.trunk_batch = 8;
  auto add = [&](double k, double factor, int64_t seed, double loss) {
    p.runs.push_back({k, seed, {loss}, factor});
  };
  add(1, 0.5, 1, 2.0), add(1, 0.5, 2, 2.2);  // mean 2.1
  add(1, 1, 1, 2.05), add(1, 1, 2, 2.05);    // mean 2.05: best at k = 1
  add(4, 1, 1, 2.3), add(4, 1, 2, 2.3);      // mean 2.3
  add(4, 2, 1, 2.1), add(4, 2, 2, 2.25);     // mean 2.175: best at k = 4
  ChooseBranchLr(&p);
  EXPECT_EQ(p.lr_factor_by_k, (std::map<double, double>{{1, 1}, {4, 2}}));
  ASSERT_EQ(p.runs.size(), 4u);
  for (const BranchRun& r : p.runs) EXPECT_EQ(r.lr_factor, r.multiplier == 1 ? 1 : 2);
  // Without a search (one factor per k) nothing changes.
  BranchPointData plain;
  plain.runs = {{1, 1, {2.0}, 1}, {2, 1, {2.1}, 1}};
  ChooseBranchLr(&plain);
  EXPECT_TRUE(plain.lr_factor_by_k.empty());
  EXPECT_EQ(plain.runs.size(), 2u);
}

TEST(BranchCbs, TooFewMultipliersIsAnError) {
  BranchPointData p;
  p.at_step = 3;
  p.trunk_batch = 8;
  p.runs.push_back({1, 1, {1.0}});
  EXPECT_FALSE(EstimateCbs(p, CbsOptions{}).ok());
}

TEST(BranchCbs, TheScheduleDoublesWhenTheCurvePassesTheNextBatch) {
  std::vector<CbsPoint> pts(3);
  pts[0].at_samples = 1000;
  pts[0].b_crit.low = 17;  // >= 16: switch to 16
  pts[1].at_samples = 3000;
  pts[1].b_crit.low = 40;  // >= 32
  pts[2].at_samples = 6000;
  pts[2].b_crit.low = 300;  // >= 256: but by doubling from 32 -> 256
  const BatchSchedule s = RecommendSchedule(pts, 8, 10000, 1.0);
  EXPECT_EQ(s.from_samples, (std::vector<int64_t>{0, 1000, 3008, 6016}));
  EXPECT_EQ(s.batches, (std::vector<int64_t>{8, 16, 32, 256}));
  EXPECT_EQ(s.steps, 125 + 126 + 94 + 16);
  EXPECT_EQ(s.constant_steps, 1250);
  EXPECT_NEAR(s.saving, 1 - 361.0 / 1250, 1e-12);
  // A margin of 2 asks for twice the batch before switching.
  const BatchSchedule m = RecommendSchedule(pts, 8, 10000, 2.0);
  EXPECT_EQ(m.batches, (std::vector<int64_t>{8, 16, 128}));
}

}  // namespace
}  // namespace batchlab::analysis
