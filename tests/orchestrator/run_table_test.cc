// The executor's table of runs (run_table.h): a slot's defaults and stages, and the database
// record of a planned run.
#include "orchestrator/execute/run_table.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

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
