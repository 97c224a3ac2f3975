// The step-time model against timings whose law is known in closed form: compute 2 ms per sample
// + 10 ms per step on every rank, and a ring allreduce with α = 100 µs, β = 1 GB/s on 1e6 fp32
// parameters. Fitted and held-out errors must be zero on exact data and within the goal with
// noise; the floor and the projection's smallest local batch must hold.
#include "analysis/estimators/step_model.h"

#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "analysis/estimators/projection.h"

namespace batchlab::analysis {
namespace {

constexpr double kPerSample = 2e-3, kPerStep = 10e-3, kAlpha = 1e-4, kBeta = 1e9;
constexpr int64_t kParams = 1'000'000;

double TrueStep(int k, int64_t b_local) {
  return kPerSample * static_cast<double>(b_local) + kPerStep +
         RingAllreduceSeconds(k, GradientBytes(kParams), kAlpha, kBeta);
}

// One timing per (K, B), K in {1, 2, 4}, B in {32, ..., 512}, with relative noise `noise`.
std::vector<RunTiming> Timings(double noise, uint64_t seed, const std::string& model = "m") {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n(0, noise);
  std::vector<RunTiming> out;
  for (int k : {1, 2, 4}) {
    for (int64_t b = 32; b <= 512; b *= 2) {
      RunTiming t;
      t.run_id = model + std::to_string(k) + "-" + std::to_string(b);
      t.strong_key = model;
      t.world_size = k;
      t.batch_size = b;
      t.local_batch_size = b / k;
      t.parameters = kParams;
      t.comm_seconds =
          k > 1 ? RingAllreduceSeconds(k, GradientBytes(kParams), kAlpha, kBeta) * (1 + n(rng))
                : 0;
      t.step_seconds = TrueStep(k, b / k) * (1 + n(rng));
      out.push_back(t);
    }
  }
  return out;
}

TEST(StepModelTest, ExactTimingsAreReproducedAndPredictedHeldOut) {
  const std::vector<RunTiming> t = Timings(0, 1);
  StatusOr<StepModel> m = FitStepModel(t);
  ASSERT_TRUE(m.ok()) << m.status().message();
  const ComputeModel* c = m->ComputeOf("m");
  ASSERT_NE(c, nullptr);
  EXPECT_NEAR(c->seconds_per_sample, kPerSample, 1e-9);
  EXPECT_NEAR(c->seconds_per_step, kPerStep, 1e-9);
  ASSERT_TRUE(m->comm.has_value());
  EXPECT_TRUE(m->comm->separated);
  EXPECT_NEAR(m->comm->alpha_seconds, kAlpha, 1e-9);

  ModelCheck check = CheckStepModel(t);
  ASSERT_TRUE(check.status.ok());
  EXPECT_EQ(check.rows.size(), 15u);
  EXPECT_EQ(check.held_out, 15);
  EXPECT_LT(check.fitted_max, 1e-9);
  // Held out, every configuration is predicted exactly, also those at the smallest local batch
  // of their rank count: the check extrapolates the fitted line (it tests the linear law), not
  // the projection's floor.
  for (const ModelCheckRow& r : check.rows) {
    EXPECT_LT(std::fabs(r.held_out_error), 1e-9) << r.label;
  }
  EXPECT_LT(check.held_out_max, 1e-9);
  EXPECT_TRUE(check.goal_met);
  EXPECT_EQ(check.not_reproduced, 0);
  EXPECT_NE(check.Sentence().find("goal <= 15%: met"), std::string::npos) << check.Sentence();
}

TEST(StepModelTest, NoisyTimingsMeetTheGoalAndStateTheError) {
  // 5% noise on every measured time: the held-out median error is of the order of the noise.
  ModelCheck check = CheckStepModel(Timings(0.05, 7));
  ASSERT_TRUE(check.status.ok());
  EXPECT_EQ(check.held_out, 15);
  EXPECT_GT(check.held_out_median, 0.001);
  EXPECT_LT(check.held_out_median, 0.15);
  EXPECT_TRUE(check.goal_met);
  EXPECT_LT(check.fitted_rms, 0.10);
}

TEST(StepModelTest, AModelThatDoesNotFitIsReportedAsMissingTheGoal) {
  // Step times that jump with the batch (a device that is 3x slower above b = 64) cannot be
  // predicted by a line: the check must say so rather than hide it.
  std::vector<RunTiming> t = Timings(0, 1);
  for (RunTiming& x : t) {
    if (x.local_batch_size > 64) x.step_seconds *= 3;
  }
  ModelCheck check = CheckStepModel(t);
  ASSERT_TRUE(check.status.ok());
  EXPECT_GT(check.held_out_median, 0.15);
  EXPECT_FALSE(check.goal_met);
  EXPECT_NE(check.Sentence().find("NOT met"), std::string::npos) << check.Sentence();
}

TEST(StepModelTest, OneConfigurationPerModelCannotBeCheckedHeldOut) {
  std::vector<RunTiming> t = Timings(0, 1);
  t.resize(1);  // K=1 B=32 only
  ModelCheck check = CheckStepModel(t);
  ASSERT_TRUE(check.status.ok());
  ASSERT_EQ(check.rows.size(), 1u);
  EXPECT_TRUE(std::isnan(check.rows[0].held_out_error));
  EXPECT_FALSE(check.rows[0].held_out_note.empty());
  EXPECT_EQ(check.held_out, 0);
  EXPECT_FALSE(check.goal_met);
  EXPECT_NE(check.Sentence().find("unchecked"), std::string::npos) << check.Sentence();
  EXPECT_FALSE(CheckStepModel({}).status.ok());
}

TEST(StepModelTest, ComputeHasAFloorAtTheSmallestMeasuredLocalBatch) {
  StatusOr<StepModel> m = FitStepModel(Timings(0, 1));
  ASSERT_TRUE(m.ok());
  const ComputeModel& c = *m->ComputeOf("m");
  EXPECT_EQ(c.min_local_batch, 8);  // B=32 on 4 ranks
  // One sample per rank costs what 8 did: per-rank compute does not shrink below the measured.
  EXPECT_DOUBLE_EQ(c.StepSeconds(1), c.StepSeconds(8));
  EXPECT_GT(c.StepSeconds(16), c.StepSeconds(8));
}

TEST(StepModelTest, ProjectionNeverGoesBelowTheLocalBatchFloorUnlessMeasured) {
  ComputeModel cm;
  cm.seconds_per_sample = kPerSample;
  cm.seconds_per_step = kPerStep;
  cm.min_local_batch = 8;
  const ClusterProfile p{"test", "", "", 2e-6, 12.5e9};
  // B=32 with a floor of 8 samples per rank: K = 1, 2, 4 only, and K=32 (1 sample per rank) is
  // gone; B=64 measured on 16 ranks (4 per rank) stays because it was run.
  std::vector<ProjectedPoint> pts =
      Project(cm, p, kParams, {{32, 100}, {64, 60}}, 64, 8, {{16, 64}});
  int b32 = 0;
  bool k16 = false;
  for (const ProjectedPoint& x : pts) {
    EXPECT_TRUE(x.batch_size / x.world_size >= 8 || x.measured) << x.world_size;
    b32 += x.batch_size == 32;
    if (x.batch_size == 64 && x.world_size == 16) k16 = x.measured;
  }
  EXPECT_EQ(b32, 3);
  EXPECT_TRUE(k16);
}

}  // namespace
}  // namespace batchlab::analysis
