// Loading a sweep from a real results database written through the results Store.
#include "analysis/data/sweep_data.h"

#include <gtest/gtest.h>

#include "analysis/estimators/gradient_noise.h"
#include "analysis/estimators/steps_to_target.h"
#include "tests/support/synthetic_sweep.h"

namespace batchlab::analysis {
namespace {

using testing::SyntheticSweep;
using testing::TempDir;

TEST(SweepDataTest, LoadsRunsParamsAndMetricsOfTheCurrentAttempt) {
  TempDir dir;
  const std::string db = dir.File("batchlab.db");
  const SyntheticSweep truth = testing::WriteSyntheticSweep(db, dir.path());
  StatusOr<SweepData> sweep = LoadSweep(db, "synthetic", LoadOptions{});
  ASSERT_TRUE(sweep.ok()) << sweep.status().message();
  EXPECT_EQ(sweep->version, 1);
  EXPECT_EQ(sweep->target, "test_accuracy>=0.85");
  ASSERT_EQ(static_cast<int>(sweep->runs.size()), truth.runs);

  const RunData& r = sweep->runs[4];  // B=32, lr=0.1, K=2 (ordinal 4)
  EXPECT_EQ(r.batch_size, 32);
  EXPECT_EQ(r.world_size, 2);
  EXPECT_EQ(r.local_batch_size, 16);
  EXPECT_EQ(r.state, "target_reached");
  EXPECT_EQ(r.parameters, truth.parameters);  // the start line's facts, stored at ingest
  EXPECT_DOUBLE_EQ(r.flops_per_step, SyntheticSweep::FlopsPerStep(truth, 32));
  EXPECT_EQ(r.tokens_per_step, 0);  // not a language model: unknown
  EXPECT_EQ(r.params.at("lr.base"), "0.1");
  EXPECT_EQ(r.params.at("batch_size"), "32");
  const int steps = SyntheticSweep::StepsTo(32, 0.1, truth.s_min, truth.b_noise);
  const Series* acc = r.Metric("test_accuracy");
  ASSERT_NE(acc, nullptr);
  ASSERT_EQ(static_cast<int>(acc->size()), steps + 3);
  EXPECT_EQ(acc->steps.front(), 1);
  EXPECT_EQ(acc->steps.back(), steps + 3);
  EXPECT_EQ(GnsSamplesOf(r).size(), acc->size());

  const RunData& pending = sweep->runs[5];  // B=32, lr=0.1, K=4
  EXPECT_EQ(pending.world_size, 4);
  EXPECT_EQ(pending.nodes, 4);
  const RunData& not_started = sweep->runs[2];  // B=32, lr=0.05, K=4
  EXPECT_EQ(not_started.state, "pending");
  EXPECT_TRUE(not_started.metrics.empty());
  EXPECT_EQ(not_started.parameters, 0);  // no start line yet: unknown, never guessed

  TargetHit hit = FindTargetHit(r, *ParseTarget(sweep->target));
  EXPECT_EQ(hit.status, HitStatus::kReached);
  EXPECT_EQ(hit.step, steps);
}

TEST(SweepDataTest, LoadsOnlyTheRequestedMetrics) {
  TempDir dir;
  const std::string db = dir.File("batchlab.db");
  testing::WriteSyntheticSweep(db, dir.path());
  LoadOptions opt;
  opt.metrics = {"step_seconds"};
  StatusOr<SweepData> sweep = LoadSweep(db, "synthetic", opt);
  ASSERT_TRUE(sweep.ok()) << sweep.status().message();
  EXPECT_EQ(sweep->runs[0].metrics.size(), 1u);
  EXPECT_NE(sweep->runs[0].Metric("step_seconds"), nullptr);
}

TEST(SweepDataTest, UnknownSweepNamesTheKnownOnes) {
  TempDir dir;
  const std::string db = dir.File("batchlab.db");
  testing::WriteSyntheticSweep(db, dir.path());
  StatusOr<SweepData> sweep = LoadSweep(db, "nope", LoadOptions{});
  ASSERT_FALSE(sweep.ok());
  EXPECT_EQ(sweep.status().code(), StatusCode::kNotFound);
  EXPECT_NE(sweep.status().message().find("synthetic (v1)"), std::string::npos)
      << sweep.status().message();
  LoadOptions v2;
  v2.version = 2;
  EXPECT_EQ(LoadSweep(db, "synthetic", v2).status().code(), StatusCode::kNotFound);
}

TEST(SweepDataTest, MissingDatabaseIsAnErrorAndIsNotCreated) {
  TempDir dir;
  const std::string db = dir.File("absent.db");
  StatusOr<SweepData> sweep = LoadSweep(db, "synthetic", LoadOptions{});
  ASSERT_FALSE(sweep.ok());
  EXPECT_FALSE(std::filesystem::exists(db));
}

}  // namespace
}  // namespace batchlab::analysis
