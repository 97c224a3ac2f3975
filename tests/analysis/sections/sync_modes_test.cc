// analysis/sections/sync_modes.h on hand-made runs whose hits and per-step metrics are known.
#include "analysis/sections/sync_modes.h"

#include <gtest/gtest.h>

namespace batchlab::analysis {
namespace {

// A run that reaches test_accuracy 0.8 at `hit_step` (evaluated every 10 steps), each step
// taking `step_seconds`, with constant per-step sync metrics.
RunData MakeRun(const std::string& id, std::map<std::string, std::string> params, int64_t seed,
                int64_t hit_step, double step_seconds, double wait, double staleness,
                double effective) {
  RunData r;
  r.id = id;
  r.params = std::move(params);
  r.params["seed"] = std::to_string(seed);
  r.batch_size = 64;
  r.local_batch_size = 32;
  r.world_size = 2;
  r.seed = seed;
  r.state = "target_reached";
  Series acc, secs, w, s, e;
  for (int64_t step = 1; step <= hit_step; ++step) {
    secs.steps.push_back(step);
    secs.values.push_back(step_seconds);
    w.steps.push_back(step);
    w.values.push_back(wait);
    s.steps.push_back(step);
    s.values.push_back(staleness);
    e.steps.push_back(step);
    e.values.push_back(effective);
    if (step % 10 == 0) {
      acc.steps.push_back(step);
      acc.values.push_back(step == hit_step ? 0.85 : 0.5);
    }
  }
  r.metrics["test_accuracy"] = acc;
  r.metrics["step_seconds"] = secs;
  r.metrics["wait_seconds"] = w;
  r.metrics["staleness"] = s;
  r.metrics["effective_batch"] = e;
  return r;
}

TEST(SyncModesTest, SettingsComeFromTheSweptValues) {
  RunData plain;
  EXPECT_EQ(SyncSettingOf(plain).mode, "allreduce");
  EXPECT_EQ(SyncSettingOf(plain).straggler, "none");
  RunData fields;
  fields.params = {{"comm.sync", "\"local_sgd\""},
                   {"comm.sync_every", "4"},
                   {"comm.straggler", R"({"rank":"random","delay_ms":30,"probability":0.5})"}};
  EXPECT_EQ(SyncSettingOf(fields).mode, "local_sgd");
  EXPECT_EQ(SyncSettingOf(fields).detail, "H=4");
  EXPECT_EQ(SyncSettingOf(fields).straggler, "random, 30 ms, p=0.5");
  RunData whole;
  whole.params = {
      {"comm", R"({"sync":"backup","backup_workers":1,"straggler":{"rank":1,"delay_ms":30}})"}};
  EXPECT_EQ(SyncSettingOf(whole).mode, "backup");
  EXPECT_EQ(SyncSettingOf(whole).detail, "b=1");
  EXPECT_EQ(SyncSettingOf(whole).straggler, "rank 1, 30 ms");
}

// A field the sweep does not vary is the declared default (comm.sync_every 4, backup_workers 1);
// a run whose resolved config is stored is read from it, every default included (its swept
// values, stored as text, are not needed).
TEST(SyncModesTest, SettingsComeFromTheResolvedConfigOrTheDeclaredDefaults) {
  RunData swept;
  swept.params = {{"comm.sync", "\"local_sgd\""}};
  EXPECT_EQ(SyncSettingOf(swept).detail, "H=4");
  swept.params = {{"comm.sync", "\"backup\""}};
  EXPECT_EQ(SyncSettingOf(swept).detail, "b=1");
  RunData stored;
  stored.params = {{"comm.straggler", R"("{\"rank\":\"random\",\"delay_ms\":20}")"}};
  stored.comm = nlohmann::json::parse(
      R"({"backend":"mpi","sync":"local_sgd","sync_every":8,"backup_workers":1,
          "straggler":{"rank":"random","delay_ms":20,"probability":0.5}})");
  EXPECT_EQ(SyncSettingOf(stored).mode, "local_sgd");
  EXPECT_EQ(SyncSettingOf(stored).detail, "H=8");
  EXPECT_EQ(SyncSettingOf(stored).straggler, "random, 20 ms, p=0.5");
  stored.comm["straggler"] = nullptr;
  EXPECT_EQ(SyncSettingOf(stored).straggler, "none");
}

// allreduce needs 100 steps of 0.04 s with a straggler (4 s), backup 120 steps of 0.01 s (1.2 s):
// 3.33x faster; without a straggler allreduce's 100 x 0.01 s is the reference (backup 0.83x).
TEST(SyncModesTest, ModesSideBySideWithAndWithoutAStraggler) {
  const std::string st = R"({"rank":1,"delay_ms":30})";
  SweepData sweep;
  for (int64_t seed : {1, 2}) {
    sweep.runs.push_back(MakeRun("a" + std::to_string(seed),
                                 {{"comm.sync", "\"allreduce\""}, {"comm.straggler", "null"}}, seed,
                                 100, 0.01, 0.002, 0, 64));
    sweep.runs.push_back(MakeRun("b" + std::to_string(seed),
                                 {{"comm.sync", "\"backup\""}, {"comm.straggler", "null"}}, seed,
                                 120, 0.01, 0.001, 0, 32));
    sweep.runs.push_back(MakeRun("c" + std::to_string(seed),
                                 {{"comm.sync", "\"allreduce\""}, {"comm.straggler", st}}, seed,
                                 100, 0.04, 0.031, 0, 64));
    sweep.runs.push_back(MakeRun("d" + std::to_string(seed),
                                 {{"comm.sync", "\"backup\""}, {"comm.straggler", st}}, seed, 120,
                                 0.01, 0.001, 0, 32));
  }
  auto target = ParseTarget("test_accuracy>=0.8");
  ASSERT_TRUE(target.ok());
  const SyncSection s = AnalyzeSync(sweep, FindTargetHits(sweep.runs, *target), *target);
  EXPECT_TRUE(s.varies);
  ASSERT_EQ(s.rows.size(), 4u);
  // No straggler first, allreduce first within.
  EXPECT_EQ(s.rows[0].setting.mode, "allreduce");
  EXPECT_EQ(s.rows[0].setting.straggler, "none");
  EXPECT_EQ(s.rows[1].setting.mode, "backup");
  EXPECT_EQ(s.rows[2].setting.straggler, "rank 1, 30 ms");
  EXPECT_EQ(s.rows[2].setting.mode, "allreduce");
  for (const SyncRow& r : s.rows) {
    EXPECT_EQ(r.runs, 2);
    EXPECT_EQ(r.reached, 2);
  }
  EXPECT_DOUBLE_EQ(*s.rows[0].steps, 100);
  EXPECT_NEAR(*s.rows[0].seconds, 1.0, 1e-9);
  EXPECT_NEAR(*s.rows[0].compute, 2.0, 1e-9);  // 2 ranks x 1 s
  EXPECT_NEAR(*s.rows[0].speedup, 1.0, 1e-9);
  EXPECT_NEAR(*s.rows[1].speedup, 1.0 / 1.2, 1e-9);
  EXPECT_NEAR(*s.rows[2].seconds, 4.0, 1e-9);
  EXPECT_NEAR(*s.rows[3].speedup, 4.0 / 1.2, 1e-9);
  EXPECT_NEAR(*s.rows[2].wait_seconds, 0.031, 1e-12);
  EXPECT_NEAR(*s.rows[3].effective_batch, 32, 1e-12);
  const std::vector<std::string> summary = SyncSummary(s);
  ASSERT_EQ(summary.size(), 2u);  // one line per straggler setting
  EXPECT_EQ(summary[0],
            "Synchronization (straggler none): fastest to target allreduce in 1 s "
            "(100 steps), 1x allreduce's time.");
  EXPECT_EQ(summary[1],
            "Synchronization (straggler rank 1, 30 ms): fastest to target backup b=1 in "
            "1.2 s (120 steps), 3.333x allreduce's time.");
  const Table t = SyncTable(s);
  EXPECT_EQ(t.rows.size(), 4u);
  EXPECT_EQ(SyncJson(s)["rows"].size(), 4u);
}

// A configuration with a seed that never reached the target has no means, and no speedup.
TEST(SyncModesTest, AConfigurationNeedsEverySeedToReachTheTarget) {
  SweepData sweep;
  sweep.runs.push_back(MakeRun("a", {{"comm.sync", "\"allreduce\""}}, 1, 50, 0.01, 0, 0, 64));
  sweep.runs.push_back(MakeRun("b", {{"comm.sync", "\"lag\""}}, 1, 60, 0.01, 0, 1, 64));
  RunData never = MakeRun("c", {{"comm.sync", "\"lag\""}}, 2, 30, 0.01, 0, 1, 64);
  never.metrics["test_accuracy"].values.assign(3, 0.5);
  never.state = "budget_exhausted";
  sweep.runs.push_back(never);
  auto target = ParseTarget("test_accuracy>=0.8");
  ASSERT_TRUE(target.ok());
  const SyncSection s = AnalyzeSync(sweep, FindTargetHits(sweep.runs, *target), *target);
  ASSERT_EQ(s.rows.size(), 2u);
  EXPECT_EQ(s.rows[1].setting.mode, "lag");
  EXPECT_EQ(s.rows[1].reached, 1);
  EXPECT_FALSE(s.rows[1].steps.has_value());
  EXPECT_FALSE(s.rows[1].speedup.has_value());
  EXPECT_NEAR(*s.rows[1].staleness, 1.0, 1e-12);
}

// Nothing about the synchronization varies: one row and a note saying so.
TEST(SyncModesTest, ASweepWithoutSyncAxesSaysSo) {
  SweepData sweep;
  sweep.runs.push_back(MakeRun("a", {}, 1, 50, 0.01, 0, 0, 64));
  auto target = ParseTarget("test_accuracy>=0.8");
  ASSERT_TRUE(target.ok());
  const SyncSection s = AnalyzeSync(sweep, FindTargetHits(sweep.runs, *target), *target);
  EXPECT_FALSE(s.varies);
  EXPECT_NE(SyncTable(s).notes.front().find("does not vary"), std::string::npos);
}

}  // namespace
}  // namespace batchlab::analysis
