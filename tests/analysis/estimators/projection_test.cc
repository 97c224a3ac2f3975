// The projection model at points computed by hand.
#include "analysis/estimators/projection.h"

#include <gtest/gtest.h>

namespace batchlab::analysis {
namespace {

TEST(ClusterProfileTest, KnownProfilesAndAHelpfulError) {
  StatusOr<ClusterProfile> ib = FindClusterProfile("ib-100g");
  ASSERT_TRUE(ib.ok());
  EXPECT_DOUBLE_EQ(ib->bandwidth_bytes_per_second, 12.5e9);
  EXPECT_FALSE(ib->source.empty());
  for (const ClusterProfile& p : ClusterProfiles()) {
    EXPECT_GT(p.alpha_seconds, 0) << p.name;
    EXPECT_GT(p.bandwidth_bytes_per_second, 0) << p.name;
    EXPECT_FALSE(p.source.empty()) << p.name;
  }
  StatusOr<ClusterProfile> bad = FindClusterProfile("infiniband");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kNotFound);
  EXPECT_NE(bad.status().message().find("ib-400g"), std::string::npos);
}

TEST(ComputeModelTest, RecoversPerSampleAndPerStepCost) {
  // step − comm = 0.001 · b_local + 0.02
  std::vector<RunTiming> t(3);
  const int64_t local[] = {32, 128, 512};
  for (int i = 0; i < 3; ++i) {
    t[i].local_batch_size = local[i];
    t[i].comm_seconds = 0.005 * i;
    t[i].step_seconds = 0.001 * local[i] + 0.02 + t[i].comm_seconds;
  }
  StatusOr<ComputeModel> m = FitComputeModel(t);
  ASSERT_TRUE(m.ok());
  EXPECT_NEAR(m->seconds_per_sample, 0.001, 1e-12);
  EXPECT_NEAR(m->seconds_per_step, 0.02, 1e-12);
  EXPECT_NEAR(m->StepSeconds(64), 0.084, 1e-12);

  // One local batch size: per-sample cost only.
  std::vector<RunTiming> one(2);
  for (RunTiming& x : one) {
    x.local_batch_size = 100;
    x.step_seconds = 0.5;
  }
  StatusOr<ComputeModel> m1 = FitComputeModel(one);
  ASSERT_TRUE(m1.ok());
  EXPECT_DOUBLE_EQ(m1->seconds_per_sample, 0.005);
  EXPECT_DOUBLE_EQ(m1->seconds_per_step, 0);

  EXPECT_FALSE(FitComputeModel({}).ok());
}

TEST(ProjectionTest, StepTimeAndTimeToTargetAtKnownPoints) {
  ComputeModel cm;
  cm.seconds_per_sample = 1e-3;
  cm.seconds_per_step = 0.01;
  ClusterProfile p{"test", "", "", 1e-5, 1e9};
  const int64_t params = 25'000'000;  // 1e8 bytes of fp32 gradients
  std::vector<ProjectedPoint> pts = Project(cm, p, params, {{1024, 500}, {4096, 200}}, 1024);
  // B=1024: K = 1..1024 (11 points); B=4096: K = 1..1024 (11 points).
  ASSERT_EQ(pts.size(), 22u);
  const ProjectedPoint& k1 = pts[0];
  EXPECT_EQ(k1.world_size, 1);
  EXPECT_DOUBLE_EQ(k1.comm_seconds, 0);
  EXPECT_DOUBLE_EQ(k1.step_seconds, 1.024 + 0.01);
  EXPECT_DOUBLE_EQ(k1.time_to_target, 500 * 1.034);
  EXPECT_DOUBLE_EQ(k1.compute, k1.time_to_target);
  const ProjectedPoint& k4 = pts[2];
  EXPECT_EQ(k4.world_size, 4);
  // compute 256e-3 + 0.01; ring 6·1e-5 + 1.5 · 1e8/1e9
  EXPECT_NEAR(k4.compute_seconds, 0.266, 1e-12);
  EXPECT_NEAR(k4.comm_seconds, 6e-5 + 0.15, 1e-12);
  EXPECT_NEAR(k4.time_to_target, 500 * (0.266 + 0.15006), 1e-9);
  EXPECT_NEAR(k4.compute, 4 * k4.time_to_target, 1e-9);

  // The frontier is non-dominated: K=1 at B=1024 has the least compute, so it is on it.
  EXPECT_TRUE(k1.on_frontier);
  int on = 0;
  for (const ProjectedPoint& x : pts) on += x.on_frontier;
  EXPECT_GE(on, 2);
  for (const ProjectedPoint& a : pts) {
    if (!a.on_frontier) continue;
    for (const ProjectedPoint& b : pts) {
      EXPECT_FALSE(b.time_to_target < a.time_to_target && b.compute < a.compute);
    }
  }
}

TEST(ProjectionTest, NoMoreRanksThanSamples) {
  ComputeModel cm;
  cm.seconds_per_sample = 1e-3;
  std::vector<ProjectedPoint> pts =
      Project(cm, *FindClusterProfile("nvlink"), 1000, {{8, 100}}, 1024);
  ASSERT_EQ(pts.size(), 4u);  // K = 1, 2, 4, 8
  EXPECT_EQ(pts.back().world_size, 8);
}

// A measured point against its projection, planted: compute 1 ms/sample + 10 ms/step, local
// batch 32 -> 0.042 s per step on one rank.
TEST(ProjectionDifferenceTest, AgreementIsSilentAndEachCauseIsNamed) {
  ComputeModel cm;
  cm.seconds_per_sample = 1e-3;
  cm.seconds_per_step = 1e-2;
  cm.min_local_batch = 32;
  ProjectedPoint p;
  p.world_size = 1;
  p.batch_size = 32;
  p.compute_seconds = cm.StepSeconds(32);
  p.step_seconds = p.compute_seconds;
  p.steps = 200;
  p.time_to_target = 200 * 0.042;
  // Measured exactly what the model says: no difference to explain.
  MeasuredAtPoint same{"B=32 K=1 lr=0.1", 200, 200 * 0.042, 0};
  EXPECT_EQ(ProjectionDifference(p, same, cm, "B=32 K=1 lr=0.1", "ib-100g"), "");
  // Within kProjectionAgreement (0.5%) is agreement too.
  MeasuredAtPoint close{"B=32 K=1 lr=0.1", 200, 200 * 0.042 * 1.004, 0};
  EXPECT_EQ(ProjectionDifference(p, close, cm, "B=32 K=1 lr=0.1", "ib-100g"), "");

  // The case: 230 steps at 0.027 s measured where the best configuration took 200.
  MeasuredAtPoint other{"B=32 K=1 lr=0.05", 230, 230 * 0.05, 0};
  const std::string d = ProjectionDifference(p, other, cm, "B=32 K=1 lr=0.1", "ib-100g");
  EXPECT_NE(d.find("B=32 K=1 was measured here (B=32 K=1 lr=0.05): 11.5 s and 230 steps"),
            std::string::npos)
      << d;
  EXPECT_NE(d.find("projected 8.4 s and 200 steps"), std::string::npos) << d;
  EXPECT_NE(d.find("the best at B=32 (B=32 K=1 lr=0.1"), std::string::npos) << d;
  EXPECT_NE(d.find("this configuration took 230"), std::string::npos) << d;
  // 0.042 s fitted against 0.05 s measured: -16% residual.
  EXPECT_NE(d.find("time per step: projected 0.042 s, measured 0.05 s"), std::string::npos) << d;
  EXPECT_NE(d.find("its residual there: -16%"), std::string::npos) << d;
  EXPECT_EQ(d.find("allreduce"), std::string::npos) << d;

  // Two ranks: the profile's allreduce replaces this machine's measured one; compute agrees.
  ProjectedPoint k2 = p;
  k2.world_size = 2;
  k2.batch_size = 64;
  k2.comm_seconds = 0.001;
  k2.step_seconds = 0.043;
  k2.time_to_target = 200 * 0.043;
  MeasuredAtPoint slow{"B=64 K=2", 200, 200 * (0.042 + 0.02), 0.02};
  const std::string c = ProjectionDifference(k2, slow, cm, "B=64 K=2", "ib-100g");
  EXPECT_EQ(c.find("steps:"), std::string::npos) << c;
  EXPECT_EQ(c.find("compute line"), std::string::npos) << c;
  EXPECT_NE(c.find("the allreduce is profile ib-100g's 0.001 s per step, not this machine's "
                   "measured 0.02 s"),
            std::string::npos)
      << c;
}

}  // namespace
}  // namespace batchlab::analysis
