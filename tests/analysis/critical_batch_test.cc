// Critical batch size: data generated from S = S_min(1 + B_noise/B) with noise must give back
// S_min, E_min and B_crit inside the fit's own interval, at the stated coverage.
#include "analysis/critical_batch.h"

#include <cmath>
#include <random>

#include <gtest/gtest.h>

namespace batchlab::analysis {
namespace {

constexpr double kSMin = 1000, kBNoise = 300, kEMin = kSMin * kBNoise;

std::vector<StepsPoint> Generate(uint64_t seed, double rel_noise, int seeds_per_batch) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n(0, rel_noise);
  std::vector<StepsPoint> pts;
  for (double b = 16; b <= 4096; b *= 2) {
    for (int s = 0; s < seeds_per_batch; ++s) {
      pts.push_back({b, kSMin * (1 + kBNoise / b) * (1 + n(rng))});
    }
  }
  return pts;
}

TEST(CriticalBatchTest, ExactDataGiveExactParameters) {
  std::vector<StepsPoint> pts = Generate(1, 0.0, 1);
  StatusOr<CritFit> fit = FitCriticalBatch(pts, CritOptions{});
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  EXPECT_NEAR(fit->s_min.value, kSMin, 1e-6 * kSMin);
  EXPECT_NEAR(fit->e_min.value, kEMin, 1e-6 * kEMin);
  EXPECT_NEAR(fit->b_crit.value, kBNoise, 1e-6 * kBNoise);
  EXPECT_LT(fit->rms_relative_residual, 1e-9);
  EXPECT_NEAR(fit->StepsAt(300), 2 * kSMin, 1e-6);     // S(B_crit) = 2 S_min
  EXPECT_NEAR(fit->ExamplesAt(300), 2 * kEMin, 1e-3);  // E(B_crit) = 2 E_min
  EXPECT_EQ(fit->batch_sizes, 9);
  EXPECT_EQ(fit->bootstrap, "residuals");
  EXPECT_FALSE(fit->b_crit_outside_sweep);
}

TEST(CriticalBatchTest, FlagsABCritOutsideTheSweptBatchSizes) {
  std::vector<StepsPoint> pts;
  for (double b = 16; b <= 64; b *= 2) pts.push_back({b, kSMin * (1 + kBNoise / b)});
  StatusOr<CritFit> fit = FitCriticalBatch(pts, CritOptions{});
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  EXPECT_NEAR(fit->b_crit.value, kBNoise, 1e-6 * kBNoise);
  EXPECT_TRUE(fit->b_crit_outside_sweep);  // 300 > 64: an extrapolation
}

TEST(CriticalBatchTest, NoisyDataRecoveredWithinTheStatedInterval) {
  StatusOr<CritFit> fit = FitCriticalBatch(Generate(42, 0.05, 1), CritOptions{});
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  EXPECT_TRUE(fit->s_min.Contains(kSMin)) << fit->s_min.low << " " << fit->s_min.high;
  EXPECT_TRUE(fit->e_min.Contains(kEMin)) << fit->e_min.low << " " << fit->e_min.high;
  EXPECT_TRUE(fit->b_crit.Contains(kBNoise)) << fit->b_crit.low << " " << fit->b_crit.high;
  EXPECT_NEAR(fit->b_crit.value, kBNoise, 0.25 * kBNoise);
  EXPECT_GT(fit->rms_relative_residual, 0.01);
  EXPECT_LT(fit->rms_relative_residual, 0.10);
  ASSERT_EQ(fit->residuals.size(), 9u);
}

TEST(CriticalBatchTest, SeedBootstrapUsedWithRepeatedSeeds) {
  StatusOr<CritFit> fit = FitCriticalBatch(Generate(9, 0.05, 3), CritOptions{});
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  EXPECT_EQ(fit->bootstrap, "seeds");
  EXPECT_EQ(fit->points, 27);
  EXPECT_TRUE(fit->b_crit.Contains(kBNoise)) << fit->b_crit.low << " " << fit->b_crit.high;
}

TEST(CriticalBatchTest, IntervalCoverageIsNearTheConfidenceLevel) {
  // 100 independent synthetic studies; a 90% interval should cover B_crit in ~90 of them.
  int covered = 0;
  for (int e = 0; e < 100; ++e) {
    CritOptions opt;
    opt.resamples = 400;
    opt.confidence = 0.90;
    opt.seed = e + 1;
    StatusOr<CritFit> fit = FitCriticalBatch(Generate(500 + e, 0.05, 1), opt);
    ASSERT_TRUE(fit.ok()) << fit.status().message();
    covered += fit->b_crit.Contains(kBNoise);
  }
  EXPECT_GE(covered, 80);  // P(Binomial(100, 0.9) < 80) < 0.1%
  EXPECT_LE(covered, 99);  // a uselessly wide interval would cover every time
}

TEST(CriticalBatchTest, TooFewBatchSizesNamesTheFix) {
  StatusOr<CritFit> fit = FitCriticalBatch({{64, 100}, {128, 60}, {64, 101}}, CritOptions{});
  ASSERT_FALSE(fit.ok());
  EXPECT_EQ(fit.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(fit.status().message().find("axes.batch_size"), std::string::npos);
}

TEST(CriticalBatchTest, PerfectScalingEverywhereMeansBCritBeyondTheSweep) {
  // Steps fall at least as fast as 1/B (no saturation): S_min fits to <= 0.
  std::vector<StepsPoint> pts;
  for (double b = 32; b <= 512; b *= 2) pts.push_back({b, 64000 / b - 5});
  StatusOr<CritFit> fit = FitCriticalBatch(pts, CritOptions{});
  ASSERT_FALSE(fit.ok());
  EXPECT_NE(fit.status().message().find("beyond the swept range"), std::string::npos);
}

TEST(CriticalBatchTest, RejectsNonPositiveSteps) {
  StatusOr<CritFit> fit = FitCriticalBatch({{64, 0}, {128, 60}, {256, 40}}, CritOptions{});
  ASSERT_FALSE(fit.ok());
  EXPECT_EQ(fit.status().code(), StatusCode::kInvalidArgument);
}

TEST(RegionTest, BoundariesAtTenPercentOfTheAsymptotes) {
  EXPECT_EQ(RegionOf(30, 300), Region::kPerfectScaling);
  EXPECT_EQ(RegionOf(31, 300), Region::kDiminishingReturns);
  EXPECT_EQ(RegionOf(2999, 300), Region::kDiminishingReturns);
  EXPECT_EQ(RegionOf(3000, 300), Region::kMaxDataParallelism);
  EXPECT_STREQ(RegionName(Region::kMaxDataParallelism), "maximal data parallelism");
}

TEST(StepsPointsOfTest, UsesEverySeedOfTheBestConfiguration) {
  BatchBest a;
  a.batch_size = 64;
  a.best = TargetHit{};
  a.seed_steps = {100, 110};
  BatchBest b;  // never reached: contributes nothing
  b.batch_size = 128;
  std::vector<StepsPoint> pts = StepsPointsOf({a, b});
  ASSERT_EQ(pts.size(), 2u);
  EXPECT_EQ(pts[1].batch_size, 64);
  EXPECT_EQ(pts[1].steps, 110);
}

}  // namespace
}  // namespace batchlab::analysis
