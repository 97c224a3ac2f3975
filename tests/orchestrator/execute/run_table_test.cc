// The executor's table of runs (run_table.h): a slot's defaults and stages, the allowed stage
// edges (and the refusal of every other), the attempts in flight, held runs, the LR search's
// groups, and the database record of a planned run. No processes: a Job that does nothing.
#include "orchestrator/execute/run_table.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace batchlab::orchestrator {
namespace {

TEST(RunTableTest, ANewSlotIsPlannedWithNoAttemptAndOnlyDoneIsDone) {
  RunSlot slot;
  EXPECT_EQ(slot.stage, RunStage::kPlanned);
  EXPECT_EQ(slot.attempt, 0);
  EXPECT_EQ(slot.failures, 0);
  EXPECT_FALSE(slot.hit.has_value());
  EXPECT_TRUE(slot.search_group.empty());
  std::set<std::string> names;
  for (RunStage stage : {RunStage::kPlanned, RunStage::kHeld, RunStage::kQueued, RunStage::kRunning,
                         RunStage::kDone, RunStage::kCancelled}) {
    slot.stage = stage;
    EXPECT_EQ(slot.done(), stage == RunStage::kDone) << RunStageName(stage);
    names.insert(RunStageName(stage));
  }
  EXPECT_EQ(names.size(), 6u);  // one name per stage
}

constexpr RunStage kAllStages[] = {RunStage::kPlanned, RunStage::kHeld, RunStage::kQueued,
                                   RunStage::kRunning, RunStage::kDone, RunStage::kCancelled};

class IdleJob final : public Job {
 public:
  JobStatus Poll() override { return {}; }
  void Terminate() override {}
  void Kill() override {}
};

InFlight AttemptOf(size_t index, int attempt) {
  InFlight a;
  a.index = index;
  a.attempt = attempt;
  a.job = std::make_unique<IdleJob>();
  return a;
}

TEST(RunTableTest, OnlyTheDocumentedEdgesAreAllowed) {
  using S = RunStage;
  const std::set<std::pair<S, S>> allowed = {
      {S::kPlanned, S::kDone},   {S::kPlanned, S::kHeld},     {S::kPlanned, S::kQueued},
      {S::kHeld, S::kQueued},    {S::kHeld, S::kDone},        {S::kQueued, S::kRunning},
      {S::kQueued, S::kQueued},  {S::kQueued, S::kDone},      {S::kRunning, S::kDone},
      {S::kRunning, S::kQueued}, {S::kRunning, S::kCancelled}};
  for (S from : kAllStages) {
    for (S to : kAllStages) {
      EXPECT_EQ(IsAllowedTransition(from, to), allowed.count({from, to}) > 0)
          << RunStageName(from) << " -> " << RunStageName(to);
    }
  }
}

TEST(RunTableTest, AForbiddenTransitionIsRefusedByNameAndChangesNothing) {
  RunTable table;
  const size_t i = table.Add("3f2a", std::nullopt);
  ASSERT_TRUE(table.Transition(i, RunStage::kDone).ok());
  const Status again = table.Transition(i, RunStage::kQueued);  // done is final
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.message().find("3f2a"), std::string::npos) << again.message();
  EXPECT_NE(again.message().find("from done to queued"), std::string::npos) << again.message();
  EXPECT_EQ(table[i].stage, RunStage::kDone);
  EXPECT_FALSE(table.Transition(7, RunStage::kQueued).ok());  // no such run
  const size_t j = table.Add("9c1e", std::nullopt);
  ASSERT_TRUE(table.Transition(j, RunStage::kQueued).ok());
  EXPECT_FALSE(table.Transition(j, RunStage::kRunning).ok());  // only with an attempt (Start)
  EXPECT_EQ(table[j].stage, RunStage::kQueued);
}

TEST(RunTableTest, RunsAreIndexedInOrderAndFoundByTheirId) {
  RunTable table;
  EXPECT_EQ(table.Add("a", std::nullopt), 0u);
  EXPECT_EQ(table.Add("b", std::nullopt), 1u);
  EXPECT_EQ(table.size(), 2u);
  EXPECT_EQ(table.IndexOf("b"), std::optional<size_t>(1));
  EXPECT_EQ(table.IndexOf("c"), std::nullopt);
  table.SetAttempt(1, 3);
  EXPECT_EQ(table.CountFailure(1), 1);
  EXPECT_EQ(table.CountFailure(1), 2);
  table.SetHit(1, 120);
  EXPECT_EQ(table[1].attempt, 3);
  EXPECT_EQ(table[1].failures, 2);
  EXPECT_EQ(table[1].hit, std::optional<int64_t>(120));
  EXPECT_EQ(table[0].failures, 0);
}

TEST(RunTableTest, StartingPutsAQueuedRunInFlightAndEndingTakesItOutInOrder) {
  RunTable table;
  table.Add("planned", std::nullopt);
  EXPECT_FALSE(table.Start(AttemptOf(0, 1)).ok());  // only a queued run starts
  EXPECT_TRUE(table.in_flight().empty());
  table = RunTable();
  for (const char* id : {"a", "b", "c"}) {
    const size_t i = table.Add(id, std::nullopt);
    ASSERT_TRUE(table.Transition(i, RunStage::kQueued).ok());
  }
  ASSERT_TRUE(table.Start(AttemptOf(0, 1)).ok());
  ASSERT_TRUE(table.Start(AttemptOf(1, 1)).ok());
  ASSERT_TRUE(table.Start(AttemptOf(2, 4)).ok());
  EXPECT_EQ(table[0].stage, RunStage::kRunning);
  ASSERT_EQ(table.in_flight().size(), 3u);
  // A run already running cannot start a second attempt.
  EXPECT_FALSE(table.Start(AttemptOf(1, 2)).ok());
  EXPECT_EQ(table.in_flight().size(), 3u);

  InFlight ended = table.EndAttempt(1);  // run b's
  EXPECT_EQ(ended.index, 1u);
  ASSERT_NE(ended.job, nullptr);
  EXPECT_EQ(table[1].stage, RunStage::kRunning);  // until the executor moves it on
  ASSERT_EQ(table.in_flight().size(), 2u);
  EXPECT_EQ(table.in_flight()[0].index, 0u);  // the others keep their order
  EXPECT_EQ(table.in_flight()[1].index, 2u);
  EXPECT_EQ(table.in_flight()[1].attempt, 4);
  EXPECT_TRUE(table.Transition(1, RunStage::kQueued).ok());  // a retry
}

TEST(RunTableTest, HeldRunsAreCountedAndListedInIndexOrder) {
  RunTable table;
  for (int k = 0; k < 4; ++k) table.Add("r" + std::to_string(k), std::nullopt);
  EXPECT_FALSE(table.any_held());
  ASSERT_TRUE(table.Transition(3, RunStage::kHeld).ok());
  ASSERT_TRUE(table.Transition(1, RunStage::kHeld).ok());
  ASSERT_TRUE(table.Transition(0, RunStage::kQueued).ok());
  EXPECT_TRUE(table.any_held());
  EXPECT_EQ(table.Held(), (std::vector<size_t>{1, 3}));
  ASSERT_TRUE(table.Transition(1, RunStage::kQueued).ok());  // its trunk's checkpoint exists
  table.SetBranchPrune(3, "the gap passed the tolerance");
  ASSERT_TRUE(table.Transition(3, RunStage::kDone).ok());  // pruned before it started
  EXPECT_FALSE(table.any_held());
  EXPECT_TRUE(table.Held().empty());
  EXPECT_EQ(table[3].branch_prune, std::optional<std::string>("the gap passed the tolerance"));
  EXPECT_FALSE(table[1].branch_prune.has_value());
}

TEST(RunTableTest, SearchGroupsCollectTheirRunsAndCountRounds) {
  RunTable table;
  table.Add("a", std::string("batch_size=64,"));
  table.Add("b", std::nullopt);  // no LR search for it
  table.Add("c", std::string("batch_size=64,"));
  table.Add("d", std::string(""));  // "" is a group too (only the LR and the seed are swept)
  EXPECT_EQ(table.SearchGroupRuns("batch_size=64,"), (std::vector<size_t>{0, 2}));
  EXPECT_EQ(table.SearchGroupRuns(""), (std::vector<size_t>{3}));
  EXPECT_TRUE(table.SearchGroupRuns("batch_size=128,").empty());
  EXPECT_EQ(table[2].search_group, "batch_size=64,");
  EXPECT_EQ(table.SearchRounds("batch_size=64,"), 0);
  table.AddSearchRound("batch_size=64,");
  table.AddSearchRound("batch_size=64,");
  EXPECT_EQ(table.SearchRounds("batch_size=64,"), 2);
  EXPECT_EQ(table.SearchRounds(""), 0);
}

TEST(RunTableTest, APlannedRecordCarriesTheRunsIdentityAndIsPending) {
  PlannedRun run;
  run.id = "3f2a";
  run.ordinal = 7;
  run.config = {{"batch_size", 256}, {"seed", 1}};
  run.params = {{"batch_size", "256"}, {"seed", "1"}};
  const results::RunRecord rec = PlannedRecord(run, 42);
  EXPECT_EQ(rec.id, "3f2a");
  EXPECT_EQ(rec.sweep_id, 42);
  EXPECT_EQ(rec.ordinal, 7);
  EXPECT_EQ(rec.config_json, run.config.dump());
  EXPECT_EQ(rec.params, run.params);
  EXPECT_EQ(rec.state, results::RunState::kPending);
  EXPECT_EQ(rec.attempt, 0);
}

}  // namespace
}  // namespace batchlab::orchestrator
