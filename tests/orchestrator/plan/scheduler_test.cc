// Longest-first packing against its lower bound max(longest, slot-seconds / slots).
#include "orchestrator/plan/scheduler.h"

#include <random>

#include <gtest/gtest.h>

namespace batchlab::orchestrator {
namespace {

TEST(SchedulerTest, TakesLongestFirstAndBackfills) {
  LptQueue q(2);
  q.Add({0, 1, 5.0, 0});
  q.Add({1, 2, 9.0, 0});
  q.Add({2, 1, 7.0, 0});
  // 2 free slots: the 2-slot job (longest) takes both.
  EXPECT_EQ(q.TakeStartable(2, 0), std::vector<int>({1}));
  // 1 free slot: longest that fits.
  EXPECT_EQ(q.TakeStartable(1, 0), std::vector<int>({2}));
  EXPECT_EQ(q.TakeStartable(0, 0), std::vector<int>());
  EXPECT_EQ(q.TakeStartable(1, 0), std::vector<int>({0}));
  EXPECT_TRUE(q.empty());
}

TEST(SchedulerTest, ClampsOversizedJobsToThePool) {
  LptQueue q(2);
  q.Add({0, 8, 1.0, 0});
  EXPECT_EQ(q.SlotsOf(0), 2);
  EXPECT_EQ(q.TakeStartable(2, 0), std::vector<int>({0}));
}

TEST(SchedulerTest, BackoffDelaysAJob) {
  LptQueue q(1);
  q.Add({0, 1, 10.0, 5.0});
  q.Add({1, 1, 1.0, 0});
  EXPECT_EQ(q.TakeStartable(1, 1.0), std::vector<int>({1}));  // 0 is not ready before t=5
  EXPECT_DOUBLE_EQ(q.NextReadyTime(), 5.0);
  EXPECT_EQ(q.TakeStartable(1, 4.9), std::vector<int>());
  EXPECT_EQ(q.TakeStartable(1, 5.0), std::vector<int>({0}));
}

TEST(SchedulerTest, DeferredJobsGoLastButNeverLeaveASlotIdle) {
  LptQueue q(2);
  q.Add({0, 1, 9.0, 0});
  q.Add({1, 1, 8.0, 0});
  q.Add({2, 1, 7.0, 0});
  auto defer_0_and_1 = [](int key) { return key != 2; };
  // Job 2 first although it is the shortest; the second slot takes the longest deferred one.
  EXPECT_EQ(q.TakeStartable(2, 0, defer_0_and_1), std::vector<int>({2, 0}));
  EXPECT_EQ(q.TakeStartable(1, 0, [](int) { return true; }), std::vector<int>({1}));
  EXPECT_TRUE(q.empty());
}

TEST(SchedulerTest, LowerBound) {
  std::vector<QueuedJob> jobs = {{0, 1, 10, 0}, {1, 1, 2, 0}, {2, 2, 3, 0}};
  EXPECT_DOUBLE_EQ(MakespanLowerBound(jobs, 2), 10.0);  // longest dominates
  std::vector<QueuedJob> many;
  for (int i = 0; i < 10; ++i) many.push_back({i, 1, 4, 0});
  EXPECT_DOUBLE_EQ(MakespanLowerBound(many, 2), 20.0);  // area dominates
}

TEST(SchedulerTest, ClassicLptExampleIsWithinGrahamBound) {
  // 2m+1 jobs on m machines: durations 2m-1, 2m-1, 2m-2, 2m-2, ..., m+1, m+1, m, m, m.
  const int m = 4;
  std::vector<QueuedJob> jobs;
  int key = 0;
  for (int d = 2 * m - 1; d > m; --d) {
    jobs.push_back({key++, 1, static_cast<double>(d), 0});
    jobs.push_back({key++, 1, static_cast<double>(d), 0});
  }
  for (int i = 0; i < 3; ++i) jobs.push_back({key++, 1, static_cast<double>(m), 0});
  double lpt = SimulateMakespan(jobs, m);
  double optimum = 3.0 * m;            // known optimum for this family
  EXPECT_DOUBLE_EQ(lpt, 4.0 * m - 1);  // LPT's worst case: exactly (4/3 - 1/(3m)) x OPT
  EXPECT_LE(lpt, (4.0 / 3.0 - 1.0 / (3.0 * m)) * optimum + 1e-9);
  EXPECT_GE(lpt, MakespanLowerBound(jobs, m));
}

TEST(SchedulerTest, RandomSingleSlotWorkloadsStayNearTheLowerBound) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> dur(1.0, 100.0);
  for (int trial = 0; trial < 50; ++trial) {
    const int slots = 1 + trial % 8;
    std::vector<QueuedJob> jobs;
    for (int i = 0; i < 40; ++i) jobs.push_back({i, 1, dur(rng), 0});
    double lb = MakespanLowerBound(jobs, slots);
    double lpt = SimulateMakespan(jobs, slots);
    EXPECT_GE(lpt, lb - 1e-9);
    EXPECT_LE(lpt, (4.0 / 3.0) * lb + 1e-9) << "trial " << trial;
  }
}

TEST(SchedulerTest, MixedSlotWorkloadsStayWithinTwiceTheLowerBound) {
  std::mt19937 rng(2);
  std::uniform_real_distribution<double> dur(1.0, 50.0);
  std::uniform_int_distribution<int> width(1, 4);
  for (int trial = 0; trial < 50; ++trial) {
    const int slots = 4 + trial % 5;
    std::vector<QueuedJob> jobs;
    for (int i = 0; i < 30; ++i) jobs.push_back({i, width(rng), dur(rng), 0});
    double lb = MakespanLowerBound(jobs, slots);
    double lpt = SimulateMakespan(jobs, slots);
    EXPECT_GE(lpt, lb - 1e-9);
    EXPECT_LE(lpt, 2.0 * lb + 1e-9) << "trial " << trial;  // list scheduling bound
  }
}

TEST(SchedulerTest, LongestFirstBeatsSubmissionOrderWhenTheLongJobComesLast) {
  std::vector<QueuedJob> jobs;
  for (int i = 0; i < 8; ++i) jobs.push_back({i, 1, 1.0, 0});
  jobs.push_back({8, 1, 8.0, 0});
  // LPT starts the long job first: makespan 8 (the bound); FIFO would give 4 + 8 = 12.
  EXPECT_DOUBLE_EQ(SimulateMakespan(jobs, 2), 8.0);
  EXPECT_DOUBLE_EQ(MakespanLowerBound(jobs, 2), 8.0);
}

}  // namespace
}  // namespace batchlab::orchestrator
