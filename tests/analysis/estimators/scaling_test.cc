// Scaling efficiency and the ring-allreduce α–β fit against known values.
#include "analysis/estimators/scaling.h"

#include <cmath>
#include <cstdio>
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

// A run of `steps` steps whose step times are i.i.d. normal around `mean` (relative sd `noise`).
RunData NoisyRun(const std::string& id, int64_t batch, int world, double mean, double noise,
                 std::mt19937_64& rng, int steps = 40) {
  RunData r = TimedRun(id, batch, world, mean, 0.0);
  std::normal_distribution<double> n(0, noise);
  Series step;
  for (int64_t s = 1; s <= steps; ++s) {
    step.steps.push_back(s);
    step.values.push_back(mean * (1 + n(rng)));
  }
  r.metrics["step_seconds"] = step;
  r.metrics.erase("comm_seconds");
  return r;
}

TEST(ScalingIntervalTest, EfficiencyIntervalCoversTheTruthAndNeverClaimsTheImpossible) {
  // Truth: K=1 at 1.0 s per step, K=2 at 0.6 s: efficiency (1/0.6)/2 = 0.8333. Over 100 synthetic
  // pairs with 10% step-to-step noise the 95% interval must cover it about 95 times.
  const double truth = 1.0 / 0.6 / 2;
  std::mt19937_64 rng(11);
  int covered = 0, flagged = 0;
  for (int e = 0; e < 100; ++e) {
    std::vector<RunData> runs = {NoisyRun("a", 256, 1, 1.0, 0.10, rng),
                                 NoisyRun("b", 256, 2, 0.6, 0.10, rng)};
    std::vector<ScalingRow> rows = StrongScaling(RunTimings(runs, 0), 300, 0.95, e + 1);
    ASSERT_EQ(rows.size(), 2u);
    const Interval& iv = rows[1].efficiency_interval;
    ASSERT_TRUE(iv.available()) << iv.unavailable;
    covered += iv.Contains(truth);
    flagged += rows[1].above_possible;
  }
  std::printf("efficiency interval coverage: %d of 100\n", covered);
  EXPECT_GE(covered, 85);
  EXPECT_LE(covered, 100);
  EXPECT_EQ(flagged, 0);
}

TEST(ScalingIntervalTest, AboveOneHundredPercentBeyondTheIntervalIsFlagged) {
  std::mt19937_64 rng(5);
  // K=2 at 0.4 s vs K=1 at 1.0 s: 125% efficiency, far beyond its interval: not a result.
  std::vector<RunData> runs = {NoisyRun("a", 256, 1, 1.0, 0.02, rng),
                               NoisyRun("b", 256, 2, 0.4, 0.02, rng)};
  std::vector<ScalingRow> rows = StrongScaling(RunTimings(runs, 0));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_NEAR(rows[1].efficiency, 1.25, 0.02);
  EXPECT_GT(rows[1].efficiency_interval.low, 1.0);
  EXPECT_TRUE(rows[1].above_possible);
  EXPECT_FALSE(rows[0].above_possible);

  // At 0.5 s with 30% noise over 10 steps, 100% lies inside the interval: a result, not flagged.
  std::vector<RunData> noisy = {NoisyRun("c", 256, 1, 1.0, 0.3, rng, 10),
                                NoisyRun("d", 256, 2, 0.48, 0.3, rng, 10)};
  rows = StrongScaling(RunTimings(noisy, 0));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_LT(rows[1].efficiency_interval.low, 1.0);
  EXPECT_FALSE(rows[1].above_possible);
}

TEST(ScalingIntervalTest, LoadFromRecordedTimesAndBaselinesUnderTheSameConditions) {
  std::mt19937_64 rng(3);
  auto at = [&](RunData r, double start, double end) {
    r.host = "node1";
    r.started_at = start;
    r.ended_at = end;
    return r;
  };
  // B=256: a 1-rank run beside another 1-rank run (load 2), then a 2-rank run alone (load 2).
  // B=128: a 1-rank run beside two others (load 3), then a 2-rank run alone (load 2).
  std::vector<RunData> runs = {at(NoisyRun("a", 256, 1, 1.0, 0.05, rng), 100, 110),
                               at(NoisyRun("b", 64, 1, 0.3, 0.05, rng), 100, 110),
                               at(NoisyRun("c", 256, 2, 0.6, 0.05, rng), 110, 120),
                               at(NoisyRun("d", 128, 1, 0.5, 0.05, rng), 120, 130),
                               at(NoisyRun("f", 32, 1, 0.2, 0.05, rng), 120, 130),
                               at(NoisyRun("g", 16, 1, 0.2, 0.05, rng), 120, 130),
                               at(NoisyRun("e", 128, 2, 0.3, 0.05, rng), 130, 140)};
  std::vector<RunTiming> t = RunTimings(runs, 0);
  ASSERT_EQ(t.size(), 7u);
  const double loads[] = {2, 2, 2, 3, 3, 3, 2};
  for (size_t i = 0; i < t.size(); ++i) EXPECT_DOUBLE_EQ(t[i].load, loads[i]) << t[i].run_id;

  // Cores unknown: the other runs' ranks must agree, so neither 2-rank run has a baseline.
  std::vector<ScalingRow> rows = StrongScaling(t);
  ASSERT_EQ(rows.size(), 4u);  // B=128: K=1, 2; B=256: K=1, 2
  EXPECT_EQ(rows[0].group, "B=128");
  EXPECT_EQ(rows[1].world_size, 2);
  EXPECT_NE(rows[1].incomparable.find("from other runs"), std::string::npos)
      << rows[1].incomparable;
  EXPECT_FALSE(rows[1].efficiency_interval.available());
  EXPECT_EQ(rows[1].base_world_size, 0);  // and not its own baseline either
  EXPECT_FALSE(rows[3].incomparable.empty());

  // 2 cores: at B=256 every rank had a core of its own in both runs (load 2 on 2 cores), so they
  // compare; at B=128 the 1-rank run shared 2 cores with 2 other ranks (oversubscribed) and the
  // 2-rank run did not, so they do not.
  for (RunTiming& x : t) x.cpus = 2;
  rows = StrongScaling(t);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_NE(rows[1].incomparable.find("oversubscribed"), std::string::npos)
      << rows[1].incomparable;
  EXPECT_EQ(rows[3].group, "B=256");
  EXPECT_EQ(rows[3].base_world_size, 1);
  EXPECT_TRUE(rows[3].incomparable.empty()) << rows[3].incomparable;
  EXPECT_NEAR(rows[3].efficiency, 1.0 / 0.6 / 2, 0.03);
  EXPECT_TRUE(rows[3].efficiency_interval.Contains(rows[3].efficiency));

  // Both oversubscribed: comparable only with loads within 25%.
  t[0].load = 3;
  t[2].load = 3.5;
  EXPECT_EQ(ConditionsDiffer(t[0], t[2]), "");
  t[2].load = 4;
  EXPECT_NE(ConditionsDiffer(t[0], t[2]), "");
  t[0].host = "node2";
  EXPECT_NE(ConditionsDiffer(t[0], t[2]).find("hosts"), std::string::npos);
}

TEST(AlphaBetaFitTest, OneDesignGivesABandwidthOnlyFit) {
  // 1 and 2 ranks of one model: t = n/β at K=2 (α cannot be separated).
  StatusOr<AlphaBetaFit> fit =
      FitRingAllreduceOrBandwidth({{2, 4e6, 0.004}, {2, 4e6, 0.004}, {1, 4e6, 0}});
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  EXPECT_FALSE(fit->separated);
  EXPECT_EQ(fit->designs, 1);
  EXPECT_DOUBLE_EQ(fit->alpha_seconds, 0);
  EXPECT_NEAR(fit->bandwidth_bytes_per_second, 1e9, 1);
  EXPECT_NEAR(RingAllreduceSeconds(2, 4e6, 0, fit->bandwidth_bytes_per_second), 0.004, 1e-12);
  StatusOr<AlphaBetaFit> none = FitRingAllreduceOrBandwidth({{1, 4e6, 0}});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("comm_seconds"), std::string::npos);
}

TEST(ScalingTest, RunsWithoutTimingsAreLeftOut) {
  RunData r;
  r.id = "x";
  EXPECT_TRUE(RunTimings({r}, 0).empty());
  RunData short_run = TimedRun("y", 64, 1, 1.0, 0.0);
  EXPECT_TRUE(RunTimings({short_run}, 100).empty());
}

// Fits outside physical bounds are "not determined" with the reason; a plausible one is not.
TEST(AlphaBetaFitTest, ImplausibleFitsAreNotDetermined) {
  // alpha = 50 us, beta = 2 GB/s at K = 2, 4: plausible.
  std::vector<AllreduceObservation> good;
  for (int k : {2, 4}) good.push_back({k, 4e6, RingAllreduceSeconds(k, 4e6, 50e-6, 2e9)});
  StatusOr<AlphaBetaFit> ok = FitRingAllreduce(good);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->undetermined, "");

  // The case: 2 ranks on one host, 400 kB in 67 ms: beta = 0.006 GB/s.
  StatusOr<AlphaBetaFit> slow = FitRingAllreduceOrBandwidth({{2, 4e5, 0.067}, {2, 4e5, 0.067}});
  ASSERT_TRUE(slow.ok());
  EXPECT_NEAR(slow->bandwidth_bytes_per_second, 4e5 / 0.067, 1);
  EXPECT_NE(slow->undetermined.find("beta = 0.00597 GB/s is below 1 GB/s, slower than shared "
                                    "memory or loopback"),
            std::string::npos)
      << slow->undetermined;
  EXPECT_NE(slow->undetermined.find("waiting"), std::string::npos);
  // The same over two hosts is below Fast Ethernet too; 0.11 GB/s (a 1 Gb/s link) is not,
  // though it would be on one host.
  StatusOr<AlphaBetaFit> net =
      FitRingAllreduceOrBandwidth({{2, 4e5, 0.067, 2}, {2, 4e5, 0.067, 2}});
  ASSERT_TRUE(net.ok());
  EXPECT_FALSE(net->one_host);
  EXPECT_NE(net->undetermined.find("below 100 Mb/s Fast Ethernet (0.0125 GB/s)"),
            std::string::npos)
      << net->undetermined;
  StatusOr<AlphaBetaFit> gbit = FitRingAllreduceOrBandwidth({{2, 4e6, 0.036, 2}, {2, 4e6, 0.037, 2}});
  ASSERT_TRUE(gbit.ok());
  EXPECT_EQ(gbit->undetermined, "");
  StatusOr<AlphaBetaFit> gbit_one_host =
      FitRingAllreduceOrBandwidth({{2, 4e6, 0.036}, {2, 4e6, 0.037}});
  ASSERT_TRUE(gbit_one_host.ok());
  EXPECT_NE(gbit_one_host->undetermined.find("below 1 GB/s"), std::string::npos);

  // A single point: nothing tests the fit.
  StatusOr<AlphaBetaFit> one = FitRingAllreduceOrBandwidth({{2, 4e6, 0.004}});
  ASSERT_TRUE(one.ok());
  EXPECT_NE(one->undetermined.find("one multi-rank run"), std::string::npos) << one->undetermined;

  // The unconstrained fit wants alpha < 0: clamped, latency not determined. t = n/beta - 1 ms.
  std::vector<AllreduceObservation> neg;
  for (int k : {2, 4, 8}) {
    neg.push_back({k, 4e7, RingAllreduceSeconds(k, 4e7, 0, 1e9) - 2.0 * (k - 1) * 1e-3});
  }
  StatusOr<AlphaBetaFit> clamped = FitRingAllreduce(neg);
  ASSERT_TRUE(clamped.ok());
  EXPECT_TRUE(clamped->alpha_at_bound);
  EXPECT_NE(clamped->undetermined.find("alpha < 0"), std::string::npos) << clamped->undetermined;

  // Latency of 5 ms per ring step: waiting, not a link.
  std::vector<AllreduceObservation> lag;
  for (int k : {2, 4}) lag.push_back({k, 4e6, RingAllreduceSeconds(k, 4e6, 5e-3, 2e9)});
  StatusOr<AlphaBetaFit> late = FitRingAllreduce(lag);
  ASSERT_TRUE(late.ok());
  EXPECT_NE(late->undetermined.find("alpha = 0.005 s per ring step is above 0.001 s"),
            std::string::npos)
      << late->undetermined;
}

}  // namespace
}  // namespace batchlab::analysis
