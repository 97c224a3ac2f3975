// Steps to target per run and the best configuration per batch size.
#include "analysis/estimators/steps_to_target.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "analysis/estimators/compute_unit.h"

namespace batchlab::analysis {
namespace {

RunData MakeRun(const std::string& id, int64_t batch, double lr, int64_t seed,
                std::vector<double> accuracy, const std::string& state = "completed") {
  RunData r;
  r.id = id;
  r.batch_size = batch;
  r.world_size = 2;
  r.seed = seed;
  r.state = state;
  r.params = {{"batch_size", std::to_string(batch)},
              {"lr.base", std::to_string(lr)},
              {"seed", std::to_string(seed)}};
  Series acc, step_seconds, samples;
  for (size_t i = 0; i < accuracy.size(); ++i) {
    acc.steps.push_back(static_cast<int64_t>(i + 1) * 10);  // evaluated every 10 steps
    acc.values.push_back(accuracy[i]);
  }
  for (int64_t s = 1; s <= static_cast<int64_t>(accuracy.size()) * 10; ++s) {
    step_seconds.steps.push_back(s);
    step_seconds.values.push_back(0.5);
    samples.steps.push_back(s);
    samples.values.push_back(static_cast<double>(s * batch));
  }
  r.metrics["test_accuracy"] = acc;
  r.metrics["step_seconds"] = step_seconds;
  r.metrics["samples"] = samples;
  r.metrics["loss"] = {{1}, {2.3}};
  return r;
}

TEST(TargetHitTest, FlopsComeFromTheStoredFlopsPerStep) {
  RunData r = MakeRun("a", 64, 0.1, 1, {0.5, 0.7, 0.9});  // met at step 30
  const Target t = *ParseTarget("test_accuracy>=0.85");
  EXPECT_EQ(FindTargetHit(r, t).flops, 0);  // not reported: unknown, never guessed
  r.flops_per_step = 2.5e9;
  const TargetHit hit = FindTargetHit(r, t);
  EXPECT_EQ(hit.step, 30);
  EXPECT_DOUBLE_EQ(hit.flops, 30 * 2.5e9);
  EXPECT_DOUBLE_EQ(hit.compute, 2 * 30 * 0.5);  // rank-seconds still
}

TEST(ParseTargetTest, ParsesAllOperators) {
  StatusOr<Target> t = ParseTarget("test_accuracy>=0.85");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->metric, "test_accuracy");
  EXPECT_EQ(t->op, CompareOp::kGreaterEqual);
  EXPECT_DOUBLE_EQ(t->value, 0.85);
  EXPECT_TRUE(t->Met(0.85));
  EXPECT_FALSE(t->Met(0.8499));

  StatusOr<Target> lt = ParseTarget(" test_loss < 0.4 ");
  ASSERT_TRUE(lt.ok());
  EXPECT_EQ(lt->op, CompareOp::kLess);
  EXPECT_FALSE(lt->Met(0.4));
  EXPECT_TRUE(lt->Met(0.39));
  EXPECT_FALSE(lt->Met(std::nan("")));
  EXPECT_EQ(ParseTarget("loss<=1")->op, CompareOp::kLessEqual);
  EXPECT_EQ(ParseTarget("x>1")->op, CompareOp::kGreater);
  EXPECT_EQ(ParseTarget("test_loss<0.4")->ToString(), "test_loss<0.4");
}

TEST(ParseTargetTest, BadTargetsNameTheFlagAndTheFix) {
  for (const char* bad : {"test_accuracy", ">=0.5", "acc>=high", "acc>=", "acc>=1e999"}) {
    StatusOr<Target> t = ParseTarget(bad);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(t.status().message().find("--target"), std::string::npos);
    EXPECT_NE(t.status().message().find("test_accuracy>=0.85"), std::string::npos);
  }
}

TEST(FindTargetHitTest, FirstEvalMeetingTheTargetWithSamplesSecondsCompute) {
  RunData r = MakeRun("a", 256, 0.1, 1, {0.5, 0.7, 0.86, 0.9});
  TargetHit h = FindTargetHit(r, *ParseTarget("test_accuracy>=0.85"));
  EXPECT_EQ(h.status, HitStatus::kReached);
  EXPECT_EQ(h.step, 30);
  EXPECT_DOUBLE_EQ(h.samples, 30.0 * 256);
  EXPECT_DOUBLE_EQ(h.seconds, 30 * 0.5);
  EXPECT_DOUBLE_EQ(h.compute, 2 * 30 * 0.5);  // world size 2
}

// slurm.elastic: steps 1..12 trained on 3 ranks, the rest (after a resume at step 12) on 2.
TEST(FindTargetHitTest, RankSecondsCountEachStepAtTheRankCountThatTrainedIt) {
  RunData r = MakeRun("a", 256, 0.1, 1, {0.5, 0.7, 0.86, 0.9});
  r.rank_segments = {{0, 3}, {12, 2}};
  EXPECT_EQ(r.WorldSizeAt(12), 3);
  EXPECT_EQ(r.WorldSizeAt(13), 2);
  TargetHit h = FindTargetHit(r, *ParseTarget("test_accuracy>=0.85"));
  EXPECT_DOUBLE_EQ(h.seconds, 30 * 0.5);
  EXPECT_DOUBLE_EQ(h.compute, 12 * 0.5 * 3 + 18 * 0.5 * 2);  // not 30 x 0.5 x 2
  // From the cumulative seconds alone: each segment's share of them at its rank count.
  r.metrics.erase("step_seconds");
  r.metrics["seconds"] = {{10, 20, 30}, {5, 10, 15}};
  h = FindTargetHit(r, *ParseTarget("test_accuracy>=0.85"));
  EXPECT_DOUBLE_EQ(h.seconds, 15);
  EXPECT_DOUBLE_EQ(h.compute, 6 * 3 + 9 * 2);
  // A run that never reached it: the compute it spent, each step at its K (the report's
  // "total spent" point), not its seconds x the last attempt's K.
  h = FindTargetHit(r, *ParseTarget("test_accuracy>=0.95"));
  EXPECT_EQ(h.status, HitStatus::kNeverReached);
  EXPECT_DOUBLE_EQ(h.spent_rank_seconds, 6 * 3 + 9 * 2);
  EXPECT_DOUBLE_EQ(SpentIn(h, 30, 15, ComputeUnit::kRankSeconds), 6 * 3 + 9 * 2);
}

TEST(FindTargetHitTest, FallsBackToWallSecondsAndStepTimesBatch) {
  RunData r = MakeRun("a", 64, 0.1, 1, {0.9});
  r.metrics.erase("step_seconds");
  r.metrics.erase("samples");
  r.metrics["seconds"] = {{10}, {7.5}};
  TargetHit h = FindTargetHit(r, *ParseTarget("test_accuracy>=0.85"));
  EXPECT_EQ(h.status, HitStatus::kReached);
  EXPECT_DOUBLE_EQ(h.seconds, 7.5);
  EXPECT_DOUBLE_EQ(h.samples, 640);
}

TEST(FindTargetHitTest, OutcomesAreReportedNotDropped) {
  const Target t = *ParseTarget("test_accuracy>=0.85");
  EXPECT_EQ(FindTargetHit(MakeRun("a", 64, 0.1, 1, {0.5, 0.6}), t).status,
            HitStatus::kNeverReached);
  EXPECT_EQ(FindTargetHit(MakeRun("a", 64, 0.1, 1, {0.5}, "diverged"), t).status,
            HitStatus::kDiverged);
  RunData nan_loss = MakeRun("a", 64, 0.1, 1, {0.5});
  nan_loss.metrics["loss"] = {{1, 2}, {2.3, std::numeric_limits<double>::quiet_NaN()}};
  EXPECT_EQ(FindTargetHit(nan_loss, t).status, HitStatus::kDiverged);
  EXPECT_EQ(FindTargetHit(MakeRun("a", 64, 0.1, 1, {0.5}, "failed"), t).status, HitStatus::kFailed);
  EXPECT_EQ(FindTargetHit(MakeRun("a", 64, 0.1, 1, {0.5}, "running"), t).status,
            HitStatus::kUnfinished);
  EXPECT_EQ(FindTargetHit(MakeRun("a", 64, 0.1, 1, {0.5}), *ParseTarget("bleu>=1")).status,
            HitStatus::kNoMetric);
  // Reaching the target before diverging still counts as reaching it.
  EXPECT_EQ(FindTargetHit(MakeRun("a", 64, 0.1, 1, {0.9}, "diverged"), t).status,
            HitStatus::kReached);
}

TEST(BestPerBatchSizeTest, BestOverLearningRatesMeanOverSeeds) {
  const Target t = *ParseTarget("test_accuracy>=0.85");
  std::vector<RunData> runs = {
      // B=64, lr 0.1: seeds reach at 30 and 50 (mean 40)
      MakeRun("a1", 64, 0.1, 1, {0.5, 0.6, 0.9}),
      MakeRun("a2", 64, 0.1, 2, {0.5, 0.6, 0.7, 0.8, 0.9}),
      // B=64, lr 0.2: seeds reach at 20 and 40 (mean 30) -> best
      MakeRun("b1", 64, 0.2, 1, {0.5, 0.9}),
      MakeRun("b2", 64, 0.2, 2, {0.5, 0.6, 0.7, 0.9}),
      // B=64, lr 0.4: one seed reaches at 10, the other diverges -> not a reaching config
      MakeRun("c1", 64, 0.4, 1, {0.9}),
      MakeRun("c2", 64, 0.4, 2, {0.1}, "diverged"),
      // B=256: never reached
      MakeRun("d1", 256, 0.1, 1, {0.5, 0.6}),
  };
  std::vector<BatchBest> best = BestPerBatchSize(FindTargetHits(runs, t));
  ASSERT_EQ(best.size(), 2u);
  EXPECT_EQ(best[0].batch_size, 64);
  EXPECT_EQ(best[0].runs, 6);
  EXPECT_EQ(best[0].reached, 5);
  EXPECT_EQ(best[0].diverged, 1);
  ASSERT_TRUE(best[0].best.has_value());
  EXPECT_DOUBLE_EQ(best[0].best_steps, 30);
  EXPECT_EQ(best[0].best->run_id, "b1");  // the fastest seed of the best configuration
  EXPECT_EQ(best[0].seed_steps, (std::vector<double>{20, 40}));
  EXPECT_DOUBLE_EQ(best[0].best_samples, 30.0 * 64);

  EXPECT_EQ(best[1].batch_size, 256);
  EXPECT_FALSE(best[1].best.has_value());
  EXPECT_EQ(best[1].never_reached, 1);
}

}  // namespace
}  // namespace batchlab::analysis
