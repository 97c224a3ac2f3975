// analysis/sections/schedule_compare.h on a sweep built by hand: a scheduled run and two constant runs
// whose steps, samples, target and losses are stated, so every figure has a known value.
#include <cmath>

#include <gtest/gtest.h>

#include "analysis/sections/schedule_compare.h"

namespace batchlab::analysis {
namespace {

// A run of `steps` steps at `batch` (switching to `later` from `switch_samples` on, if set),
// loss 1/step, test_accuracy 0.1 x step evaluated every step.
RunData MakeRun(int64_t batch, int64_t steps, int64_t later = 0, int64_t switch_samples = 0) {
  RunData r;
  r.batch_size = batch;
  if (later > 0) {
    r.batch_schedule = {{"at_samples", {switch_samples}}, {"batch_sizes", {later}}};
  }
  int64_t samples = 0;
  for (int64_t s = 1; s <= steps; ++s) {
    samples += later > 0 && samples >= switch_samples ? later : batch;
    r.metrics["loss"].steps.push_back(s);
    r.metrics["loss"].values.push_back(1.0 / static_cast<double>(s));
    r.metrics["samples"].steps.push_back(s);
    r.metrics["samples"].values.push_back(static_cast<double>(samples));
    r.metrics["test_accuracy"].steps.push_back(s);
    r.metrics["test_accuracy"].values.push_back(0.1 * static_cast<double>(s));
  }
  return r;
}

TEST(ScheduleCompareTest, ScheduledRunsAgainstConstantOnesWithStatedFigures) {
  SweepData sweep;
  sweep.target = "test_accuracy>=0.35";  // met at step 4 by every run
  sweep.scheduled.push_back(MakeRun(16, 6, 64, 64));  // 4 x 16 = 64, then 2 x 64: 192 samples
  sweep.runs.push_back(MakeRun(64, 3));               // 192 samples in 3 steps
  sweep.runs.push_back(MakeRun(16, 12));              // 192 samples in 12 steps
  const ScheduleSection s = CompareSchedules(sweep, 2);
  ASSERT_EQ(s.rows.size(), 3u);
  EXPECT_EQ(s.rows[0].label, "B=16→64@64");
  EXPECT_TRUE(s.rows[0].scheduled);
  EXPECT_EQ(s.rows[0].largest_batch, 64);
  EXPECT_EQ(s.rows[0].seeds, 1);
  EXPECT_EQ(s.rows[0].steps, 6);
  EXPECT_EQ(s.rows[0].samples, 192);
  EXPECT_EQ(s.rows[0].target_step, 4.0);
  EXPECT_EQ(s.rows[0].target_samples, 64.0);  // 4 x 16, before the switch
  EXPECT_EQ(s.rows[0].reached, 1);
  EXPECT_DOUBLE_EQ(*s.rows[0].final_loss, (1.0 / 5 + 1.0 / 6) / 2);
  EXPECT_FALSE(s.rows[0].final_loss_sd.has_value());  // one seed
  // Constant runs after it, by batch.
  EXPECT_EQ(s.rows[1].label, "B=16");
  EXPECT_EQ(s.rows[1].steps, 12);
  EXPECT_EQ(s.rows[2].label, "B=64");
  EXPECT_FALSE(s.rows[2].target_step.has_value());  // 3 steps: accuracy 0.3 at most
  ASSERT_EQ(s.readings.size(), 2u);
  EXPECT_NE(s.readings[0].find("B=16→64@64 took 6 steps to 192 samples, 50% fewer than B=16 "
                               "(12 steps)"),
            std::string::npos)
      << s.readings[0];
  EXPECT_NE(s.readings[0].find("to the target: 4 steps against 4 (0% fewer), 64 samples against "
                               "64 (0% fewer)"),
            std::string::npos)
      << s.readings[0];
  EXPECT_EQ(s.readings[0].find("reached it only"), std::string::npos) << s.readings[0];
  EXPECT_NE(s.readings[1].find("100% more than B=64 (3 steps)"), std::string::npos)
      << s.readings[1];
  EXPECT_EQ(s.readings[1].find("to the target"), std::string::npos) << s.readings[1];
  const Table t = ScheduleTable(s);
  EXPECT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(t.rows[0][1], "yes");
}

// Samples to the target are counted at each step's own batch, and a configuration whose seeds
// did not all reach the target is compared on the seeds that did, which the reading says.
TEST(ScheduleCompareTest, TargetSamplesAndSeedsThatMissedItAreStated) {
  SweepData sweep;
  sweep.target = "test_accuracy>=0.55";  // met at step 6 by a run of 6 steps or more
  for (int seed = 1; seed <= 2; ++seed) {
    RunData sched = MakeRun(16, 8, 64, 64);  // 4 x 16, then 64 a step: 192 samples at step 6
    RunData constant = MakeRun(64, seed == 1 ? 8 : 5);  // seed 2 stops at step 5: misses it
    sched.seed = constant.seed = seed;
    sched.params = constant.params = {{"seed", std::to_string(seed)}};
    sweep.scheduled.push_back(sched);
    sweep.runs.push_back(constant);
  }
  const ScheduleSection s = CompareSchedules(sweep, 2);
  ASSERT_EQ(s.rows.size(), 2u);
  EXPECT_EQ(s.rows[0].target_step, 6.0);
  EXPECT_EQ(s.rows[0].target_samples, 192.0);
  EXPECT_EQ(s.rows[0].reached, 2);
  EXPECT_EQ(s.rows[1].seeds, 2);
  EXPECT_EQ(s.rows[1].reached, 1);
  EXPECT_EQ(s.rows[1].target_samples, 384.0);  // 6 x 64, seed 1 only
  ASSERT_EQ(s.readings.size(), 1u);
  // The schedule's two seeds met it at the same step (sd 0); the constant batch's one has none.
  EXPECT_NE(s.readings[0].find("to the target: 6 ± 0 steps against 6 (0% fewer), 192 ± 0 samples "
                               "against 384 (50% fewer) — means over the seeds that reached it "
                               "only: 2 of 2 and 1 of 2 (mean ± sd over seeds)."),
            std::string::npos)
      << s.readings[0];
  const Table t = ScheduleTable(s);
  EXPECT_EQ(t.columns[6], "target_samples");
  EXPECT_EQ(t.rows[1][6], "384");
}

// A reading over seeds shows the sd of the steps and samples to the target it compares, so its
// "(mean ± sd over seeds)" is true; one seed a side shows neither and says nothing of seeds.
TEST(ScheduleCompareTest, TargetFiguresOverSeedsShowTheirSd) {
  SweepData sweep;
  sweep.target = "test_accuracy>=0.55";  // seed 1 meets it at step 6, seed 2 (+0.1) at step 5
  for (int seed = 1; seed <= 2; ++seed) {
    RunData sched = MakeRun(16, 8, 64, 64);  // 64 samples by step 4, then 64 a step
    RunData constant = MakeRun(64, 8);
    for (RunData* r : {&sched, &constant}) {
      r->seed = seed;
      r->params = {{"seed", std::to_string(seed)}};
      for (double& v : r->metrics["test_accuracy"].values) v += 0.1 * (seed - 1);
    }
    sweep.scheduled.push_back(sched);
    sweep.runs.push_back(constant);
  }
  const ScheduleSection s = CompareSchedules(sweep, 2);
  ASSERT_EQ(s.rows.size(), 2u);
  EXPECT_EQ(s.rows[0].target_step, 5.5);
  EXPECT_NEAR(*s.rows[0].target_step_sd, std::sqrt(0.5), 1e-12);     // steps 6 and 5
  EXPECT_NEAR(*s.rows[0].target_samples_sd, std::sqrt(2048.0), 1e-9);  // samples 192 and 128
  EXPECT_NEAR(*s.rows[1].target_samples_sd, std::sqrt(2048.0), 1e-9);  // 384 and 320
  ASSERT_EQ(s.readings.size(), 1u);
  EXPECT_EQ(s.readings[0],
            "B=16→64@64 to the target: 5.5 ± 0.707 steps against 5.5 ± 0.707 (0% fewer), 160 ± "
            "45.3 samples against 352 ± 45.3 (55% fewer) (mean ± sd over seeds).");

  SweepData one = sweep;
  one.scheduled.resize(1);
  one.runs.resize(1);
  const ScheduleSection single = CompareSchedules(one, 2);
  ASSERT_EQ(single.readings.size(), 1u);
  EXPECT_EQ(single.readings[0].find("±"), std::string::npos) << single.readings[0];
  EXPECT_EQ(single.readings[0].find("seeds"), std::string::npos) << single.readings[0];
}

// Seeds of one configuration are pooled: mean and sample sd of their final losses.
TEST(ScheduleCompareTest, SeedsArePooledPerConfiguration) {
  SweepData sweep;
  for (int seed = 1; seed <= 3; ++seed) {
    RunData r = MakeRun(16, 4, 32, 32);
    r.seed = seed;
    r.params = {{"seed", std::to_string(seed)}};
    // Last two losses shifted by the seed: run means 0.375 + 0.1 x seed.
    for (double& v : r.metrics["loss"].values) v += 0.1 * seed;
    sweep.scheduled.push_back(r);
  }
  const ScheduleSection s = CompareSchedules(sweep, 2);
  ASSERT_EQ(s.rows.size(), 1u);
  EXPECT_EQ(s.rows[0].seeds, 3);
  EXPECT_NEAR(*s.rows[0].final_loss, (1.0 / 3 + 1.0 / 4) / 2 + 0.2, 1e-12);
  EXPECT_NEAR(*s.rows[0].final_loss_sd, 0.1, 1e-12);
}

}  // namespace
}  // namespace batchlab::analysis
