// run_values::BatchSchedule (base/run_values.h) against a step-by-step simulation of its rule:
// a step trains at the batch of the last switch whose at_samples the samples seen before it
// reached.
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "base/run_values.h"

namespace batchlab::run_values {
namespace {

// The rule, one step at a time: the oracle.
struct Simulated {
  std::vector<int64_t> batch;    // batch[s - 1]: step s's
  std::vector<int64_t> samples;  // samples[s]: seen after s steps
};
Simulated Simulate(const BatchSchedule& s, int64_t steps) {
  Simulated out;
  out.samples.push_back(0);
  for (int64_t step = 1; step <= steps; ++step) {
    int64_t b = s.first_batch;
    for (size_t i = 0; i < s.at_samples.size(); ++i) {
      if (out.samples.back() >= s.at_samples[i]) b = s.batch_sizes[i];
    }
    out.batch.push_back(b);
    out.samples.push_back(out.samples.back() + b);
  }
  return out;
}

TEST(BatchScheduleTest, TheDocumentedExample) {
  BatchSchedule s{64, {1000}, {256}};
  EXPECT_EQ(s.At(16).batch, 64);
  EXPECT_EQ(s.At(16).samples_before, 960);
  EXPECT_EQ(s.At(17).batch, 256);  // 16 x 64 = 1024 >= 1000
  EXPECT_EQ(s.At(17).samples_before, 1024);
  EXPECT_EQ(s.At(17).segment, 1);
  EXPECT_EQ(s.SamplesAfter(17), 1280);
  EXPECT_EQ(s.StepsFor(1280), 17);
  EXPECT_EQ(s.StepsFor(1281), 18);
  EXPECT_EQ(s.LargestBatch(), 256);
}

TEST(BatchScheduleTest, AConstantScheduleIsTheOldArithmetic) {
  BatchSchedule s{96, {}, {}};
  EXPECT_TRUE(s.constant());
  for (int64_t samples : {1, 95, 96, 97, 10000}) {
    Budget b;
    b.samples = samples;
    EXPECT_EQ(TotalSteps(b, s, 0), TotalSteps(b, 96, 0)) << samples;
  }
  Budget e;
  e.epochs = 2.5;
  EXPECT_EQ(TotalSteps(e, s, 60000), TotalSteps({0, 0, 150000, 0}, 96, 0));
}

TEST(BatchScheduleTest, EveryFunctionAgreesWithTheStepByStepRuleOnRandomSchedules) {
  std::mt19937_64 gen(7);
  for (int trial = 0; trial < 300; ++trial) {
    BatchSchedule s;
    s.first_batch = 1 + static_cast<int64_t>(gen() % 64);
    int64_t at = 0;
    const int switches = static_cast<int>(gen() % 4);
    for (int i = 0; i < switches; ++i) {
      at += 1 + static_cast<int64_t>(gen() % 500);  // may fall inside a step: overshoot
      s.at_samples.push_back(at);
      s.batch_sizes.push_back(1 + static_cast<int64_t>(gen() % 128));
    }
    const int64_t steps = 120;
    const Simulated sim = Simulate(s, steps);
    for (int64_t step = 1; step <= steps; ++step) {
      ASSERT_EQ(s.At(step).batch, sim.batch[step - 1]) << "trial " << trial << " step " << step;
      ASSERT_EQ(s.At(step).samples_before, sim.samples[step - 1]) << trial << " " << step;
      ASSERT_EQ(s.SamplesAfter(step), sim.samples[step]) << trial << " " << step;
    }
    for (int64_t samples = 1; samples <= sim.samples.back(); samples += 1 + samples / 7) {
      int64_t expect = 0;
      while (sim.samples[expect] < samples) ++expect;
      ASSERT_EQ(s.StepsFor(samples), expect) << "trial " << trial << " samples " << samples;
      Budget b;
      b.samples = samples;
      b.steps = 50;
      ASSERT_EQ(TotalSteps(b, s, 0), std::min<int64_t>(expect, 50)) << trial << " " << samples;
    }
  }
}

// LengthOf: the run length every layer reads (the trainer, the ETA, the expected seconds).
TEST(RunLengthTest, TheSmallestLimitWinsAndAScheduleCountsItsBatches) {
  RunShape shape;
  shape.train_samples = 6000;
  shape.world = 2;
  shape.batch = 100;
  shape.local_batch = 50;
  shape.budget = {1, 0, 1000, 0};  // one epoch (60 steps) or 1000 samples (10 steps)
  RunLength n = LengthOf(shape);
  EXPECT_EQ(n.data_ranks, 2);
  EXPECT_EQ(n.steps_per_epoch, 60);
  EXPECT_EQ(n.samples_per_step, 100);
  EXPECT_EQ(n.total_steps, 10);
  EXPECT_EQ(n.SamplesAfter(10), 1000);
  shape.schedule.at_samples = {500};
  shape.schedule.batch_sizes = {300};
  n = LengthOf(shape);  // 5 steps of 100 to 500 samples, then 2 of 300
  EXPECT_EQ(n.schedule.first_batch, 100);
  EXPECT_EQ(n.total_steps, 7);
  EXPECT_EQ(n.SamplesAfter(7), 1100);
  shape.budget = {0, 0, 0, 30};  // seconds only
  EXPECT_EQ(LengthOf(shape).total_steps, 0);
}

TEST(RunLengthTest, OneWorkerStepsReadTheDataOnTheWorkersOnly) {
  RunShape shape;  // async_ps on 3 ranks: rank 0 serves, two workers of 100 samples a step
  shape.train_samples = 6000;
  shape.world = 3;
  shape.batch = 300;
  shape.local_batch = 100;
  shape.one_worker_steps = true;
  shape.budget = {1, 0, 0, 0};
  const RunLength n = LengthOf(shape);
  EXPECT_EQ(n.data_ranks, 2);
  EXPECT_EQ(n.shard_steps_per_epoch, 30);  // 3000 rows a worker, 100 a step
  EXPECT_EQ(n.steps_per_epoch, 60);        // one update per worker step
  EXPECT_EQ(n.samples_per_step, 100);
  EXPECT_EQ(n.total_steps, 60);
  EXPECT_EQ(n.SamplesAfter(n.total_steps), 6000);
}

}  // namespace
}  // namespace batchlab::run_values
