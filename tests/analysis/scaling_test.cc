// Scaling efficiency and the ring-allreduce α–β fit against known values.
#include "analysis/scaling.h"

#include <cmath>
#include <random>

#include <gtest/gtest.h>

namespace batchlab::analysis {
namespace {

RunData TimedRun(const std::string& id, int64_t batch, int world, double step_s, double comm_s,
                 int64_t parameters = 100000) {
  RunData r;
  r.id = id;
  r.batch_size = batch;
  r.world_size = world;
  r.nodes = world;
  r.local_batch_size = batch / world;
  r.parameters = parameters;
  r.params = {{"batch_size", std::to_string(batch)},
              {"nodes", std::to_string(world)},
              {"model.name", "\"mlp\""}};
  Series step, comm;
  for (int64_t s = 1; s <= 20; ++s) {
    step.steps.push_back(s);
    comm.steps.push_back(s);
    // The first 5 steps are slow warm-up and must be skipped.
    step.values.push_back(s <= 5 ? 100 * step_s : step_s);
    comm.values.push_back(comm_s);
  }
  r.metrics["step_seconds"] = step;
  r.metrics["comm_seconds"] = comm;
  return r;
}

TEST(RingAllreduceTest, FormulaAtKnownPoints) {
  EXPECT_DOUBLE_EQ(RingAllreduceSeconds(1, 1e9, 1e-5, 1e9), 0.0);
  // K=2: 2α + n/β
  EXPECT_DOUBLE_EQ(RingAllreduceSeconds(2, 1e9, 1e-5, 1e9), 2e-5 + 1.0);
  // K=4: 6α + 1.5 n/β
  EXPECT_DOUBLE_EQ(RingAllreduceSeconds(4, 4e8, 1e-5, 1e9), 6e-5 + 0.6);
  EXPECT_DOUBLE_EQ(GradientBytes(1000), 4000);
}

TEST(AlphaBetaFitTest, RecoversKnownLatencyAndBandwidth) {
  const double alpha = 50e-6, beta = 2e9;
  std::mt19937_64 rng(3);
  std::normal_distribution<double> noise(0, 0.01);
  std::vector<AllreduceObservation> obs;
  for (int k : {2, 4, 8, 16}) {
    for (double bytes : {4e5, 4e6, 4e7}) {
      obs.push_back({k, bytes, RingAllreduceSeconds(k, bytes, alpha, beta) * (1 + noise(rng))});
    }
  }
  StatusOr<AlphaBetaFit> fit = FitRingAllreduce(obs);
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  EXPECT_NEAR(fit->alpha_seconds, alpha, 0.05 * alpha);
  EXPECT_NEAR(fit->bandwidth_bytes_per_second, beta, 0.02 * beta);
  EXPECT_EQ(fit->observations, 12);
}

TEST(AlphaBetaFitTest, OneDesignCannotSeparateLatencyFromBandwidth) {
  StatusOr<AlphaBetaFit> fit = FitRingAllreduce({{2, 4e6, 0.01}, {2, 4e6, 0.011}, {1, 4e6, 0}});
  ASSERT_FALSE(fit.ok());
  EXPECT_EQ(fit.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(fit.status().message().find("node counts"), std::string::npos);
}

TEST(AlphaBetaFitTest, PureLatencyDataClampBandwidthTermAtZero) {
  // Time independent of bytes and ∝ (K−1): the unconstrained fit could go negative on 1/β.
  std::vector<AllreduceObservation> obs = {
      {2, 1e6, 2e-3}, {4, 1e6, 6e-3}, {2, 1e7, 1.9e-3}, {4, 1e7, 5.8e-3}};
  StatusOr<AlphaBetaFit> fit = FitRingAllreduce(obs);
  ASSERT_TRUE(fit.ok());
  EXPECT_GE(fit->alpha_seconds, 0);
  EXPECT_GT(fit->bandwidth_bytes_per_second, 0);
  EXPECT_NEAR(fit->alpha_seconds, 1e-3, 0.1e-3);
}

TEST(ScalingTest, StrongAndWeakSpeedupAndEfficiency) {
  std::vector<RunData> runs = {
      TimedRun("s1", 256, 1, 1.0, 0.0),    // 256 samples/s
      TimedRun("s2", 256, 2, 0.64, 0.1),   // 400 samples/s: speedup 1.5625, efficiency 0.78125
      TimedRun("s4", 256, 4, 0.4, 0.2),    // 640 samples/s: speedup 2.5, efficiency 0.625
      TimedRun("w2", 512, 2, 1.25, 0.25),  // b_local 256 on 2 ranks: 409.6 samples/s
  };
  std::vector<RunTiming> t = RunTimings(runs, 5);
  ASSERT_EQ(t.size(), 4u);
  EXPECT_DOUBLE_EQ(t[1].step_seconds, 0.64);  // warm-up skipped
  EXPECT_DOUBLE_EQ(t[1].throughput, 400);
  EXPECT_DOUBLE_EQ(t[2].comm_fraction, 0.5);
  // bus bandwidth = n/t · 2(K−1)/K = 4e5 / 0.2 · 1.5
  EXPECT_DOUBLE_EQ(t[2].bus_bandwidth, 4e5 / 0.2 * 1.5);

  std::vector<ScalingRow> strong = StrongScaling(t);
  ASSERT_EQ(strong.size(), 3u);
  EXPECT_EQ(strong[0].group, "B=256");
  EXPECT_DOUBLE_EQ(strong[0].efficiency, 1.0);
  EXPECT_DOUBLE_EQ(strong[1].speedup, 1.5625);
  EXPECT_DOUBLE_EQ(strong[1].efficiency, 0.78125);
  EXPECT_DOUBLE_EQ(strong[2].speedup, 2.5);
  EXPECT_DOUBLE_EQ(strong[2].efficiency, 0.625);

  // Weak: b_local=256 at K=1 (s1: 256 samples/s) and K=2 (w2: 409.6): efficiency 0.8.
  std::vector<ScalingRow> weak = WeakScaling(t);
  ASSERT_EQ(weak.size(), 2u);
  EXPECT_EQ(weak[0].group, "b_local=256");
  EXPECT_EQ(weak[1].world_size, 2);
  EXPECT_NEAR(weak[1].efficiency, 0.8, 1e-12);
}

TEST(ScalingTest, RunsWithoutTimingsAreLeftOut) {
  RunData r;
  r.id = "x";
  EXPECT_TRUE(RunTimings({r}, 0).empty());
  RunData short_run = TimedRun("y", 64, 1, 1.0, 0.0);
  EXPECT_TRUE(RunTimings({short_run}, 100).empty());
}

}  // namespace
}  // namespace batchlab::analysis
