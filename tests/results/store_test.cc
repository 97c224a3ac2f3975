// The writer API on a real SQLite file: sweep versions, idempotent AddRun with typed parameter
// columns, state transitions (attempts, events, outcome reset) and free-form events.
#include "results/store.h"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <string>
#include <vector>

#include "results/database.h"
#include "results/schema.h"
#include "tests/support/file_text.h"
#include "tests/support/temp_dir.h"

namespace batchlab::results {
namespace {

using testing::TempDir;

constexpr const char* kConfig = R"({
  "run_id": "abc", "sweep": "s", "seed": 7, "nodes": 2, "ranks_per_node": 1, "world_size": 2,
  "batch_size": 256, "accumulation": 1, "local_batch_size": 128,
  "data": {"name": "fashion-mnist"}, "model": {"name": "mlp"},
  "optimizer": {"name": "momentum"}, "lr": {"base": 0.05, "base_batch_size": 64, "rule": "linear"},
  "comm": {"backend": "mpi"}, "precision": "fp32"})";

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.File("batchlab.db");
    auto store = Store::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status().message();
    store_ = std::move(*store);
  }
  std::unique_ptr<Database> Reader() {
    auto db = OpenReadOnly(path_);
    EXPECT_TRUE(db.ok()) << db.status().message();
    return db.ok() ? std::move(*db) : nullptr;
  }
  RunRecord Run(int64_t sweep_id, const std::string& id) {
    RunRecord r;
    r.id = id;
    r.sweep_id = sweep_id;
    r.config_json = kConfig;
    r.params = {{"batch_size", "256"}, {"lr.rule", "\"linear\""}, {"nodes", "2"}};
    return r;
  }

  TempDir dir_;
  std::string path_;
  std::unique_ptr<Store> store_;
};

TEST_F(StoreTest, SweepVersionsCountUpPerName) {
  auto none = store_->LatestSweep("study");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  auto v1 = store_->CreateSweep("study", "{\"a\":1}", "h1");
  auto v2 = store_->CreateSweep("study", "{\"a\":2}", "h2");
  auto other = store_->CreateSweep("other", "{}", "h3");
  ASSERT_TRUE(v1.ok() && v2.ok() && other.ok());
  EXPECT_EQ(v1->version, 1);
  EXPECT_EQ(v2->version, 2);
  EXPECT_EQ(other->version, 1);
  auto latest = store_->LatestSweep("study");
  ASSERT_TRUE(latest.ok() && latest->has_value());
  EXPECT_EQ((*latest)->id, v2->id);
  EXPECT_EQ((*latest)->spec_hash, "h2");
  EXPECT_EQ((*latest)->spec_json, "{\"a\":2}");
}

TEST_F(StoreTest, AddRunIsIdempotentAndFillsTypedColumns) {
  auto sweep = store_->CreateSweep("s", "{}", "h");
  ASSERT_TRUE(sweep.ok());
  RunRecord r = Run(sweep->id, "run-a");
  ASSERT_TRUE(store_->AddRun(r).ok());
  r.config_json = R"({"batch_size": 999})";  // ignored: the run exists
  ASSERT_TRUE(store_->AddRun(r).ok());
  auto runs = store_->RunsOfSweep(sweep->id);
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].config_json, kConfig);
  EXPECT_EQ((*runs)[0].state, RunState::kPending);
  EXPECT_EQ((*runs)[0].params.at("lr.rule"), "\"linear\"");
  EXPECT_EQ((*runs)[0].params.at("batch_size"), "256");
  auto db = Reader();
  ASSERT_NE(db, nullptr);
  auto st = db->Prepare(
      "SELECT batch_size, nodes, world_size, local_batch_size, optimizer, lr_rule, lr_base, "
      "lr_base_batch_size, seed, model, dataset, precision, comm_backend, typeof(batch_size) "
      "FROM run_summary WHERE run_id = 'run-a'");
  ASSERT_TRUE(st.ok());
  ASSERT_TRUE(*st->Step());
  EXPECT_EQ(st->ColumnInt(0), 256);
  EXPECT_EQ(st->ColumnInt(1), 2);
  EXPECT_EQ(st->ColumnInt(2), 2);
  EXPECT_EQ(st->ColumnInt(3), 128);
  EXPECT_EQ(st->ColumnText(4), "momentum");
  EXPECT_EQ(st->ColumnText(5), "linear");
  EXPECT_DOUBLE_EQ(st->ColumnDouble(6), 0.05);
  EXPECT_EQ(st->ColumnInt(7), 64);
  EXPECT_EQ(st->ColumnInt(8), 7);
  EXPECT_EQ(st->ColumnText(9), "mlp");
  EXPECT_EQ(st->ColumnText(10), "fashion-mnist");
  EXPECT_EQ(st->ColumnText(11), "fp32");
  EXPECT_EQ(st->ColumnText(12), "mpi");
  EXPECT_EQ(st->ColumnText(13), "integer");
}

TEST_F(StoreTest, AddRunRejectsBadJsonAndUnknownSweep) {
  RunRecord bad;
  bad.id = "x";
  bad.sweep_id = 1;
  bad.config_json = "{not json";
  Status s = store_->AddRun(bad);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("config_json"), std::string::npos);
  RunRecord orphan = Run(/*sweep_id=*/42, "orphan");
  EXPECT_FALSE(store_->AddRun(orphan).ok());  // foreign key: no sweep 42
}

TEST_F(StoreTest, TransitionsCountAttemptsAndRecordEvents) {
  auto sweep = store_->CreateSweep("s", "{}", "h");
  ASSERT_TRUE(sweep.ok());
  ASSERT_TRUE(store_->AddRun(Run(sweep->id, "r")).ok());
  ASSERT_TRUE(store_->Transition("r", RunState::kRunning, {}).ok());
  ASSERT_TRUE(store_->Transition("r", RunState::kFailed, {1, "rank 1: connection reset"}).ok());
  ASSERT_TRUE(store_->RecordEvent("r", "retry", "attempt 2 of 3").ok());
  ASSERT_TRUE(store_->Transition("r", RunState::kRunning, {}).ok());
  auto runs = store_->RunsOfSweep(sweep->id);
  ASSERT_TRUE(runs.ok());
  const RunRecord& r = (*runs)[0];
  EXPECT_EQ(r.state, RunState::kRunning);
  EXPECT_EQ(r.attempt, 2);
  EXPECT_FALSE(r.exit_code.has_value());  // reset for the new attempt
  EXPECT_FALSE(r.ended_at.has_value());
  EXPECT_TRUE(r.started_at.has_value());
  EXPECT_FALSE(r.host.empty());
  ASSERT_TRUE(store_->Transition("r", RunState::kCompleted, {0, ""}).ok());
  auto db = Reader();
  ASSERT_NE(db, nullptr);
  EXPECT_EQ(*db->QueryInt("SELECT count(*) FROM events WHERE kind = 'transition'"), 4);
  EXPECT_EQ(*db->QueryInt("SELECT count(*) FROM events WHERE from_state = 'running' AND "
                          "to_state = 'failed' AND attempt = 1 AND message LIKE "
                          "'exit code 1: rank 1%'"),
            1);
  EXPECT_EQ(*db->QueryInt("SELECT count(*) FROM events WHERE kind = 'retry' AND attempt = 1"), 1);
  EXPECT_EQ(*db->QueryInt("SELECT exit_code FROM runs WHERE id = 'r' AND ended_at IS NOT NULL"), 0);
  EXPECT_EQ(store_->Transition("missing", RunState::kRunning, {}).code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->RecordEvent("missing", "retry", "").code(), StatusCode::kNotFound);
}

// Per sweep and batch size, the run with the fewest steps to target among those that reached it.
TEST_F(StoreTest, BestRunPerBatchPicksFewestStepsToTarget) {
  auto sweep = store_->CreateSweep("s", "{}", "h");
  ASSERT_TRUE(sweep.ok());
  struct R {
    const char* id;
    int batch;
    const char* target_step;  // JSON: null = never reached
  };
  const R runs[] = {{"a", 64, "900"},
                    {"b", 64, "700"},
                    {"c", 64, "null"},
                    {"d", 256, "null"},
                    {"e", 1024, "300"}};
  for (const R& r : runs) {
    RunRecord rec = Run(sweep->id, r.id);
    rec.config_json = fmt::format(R"({{"batch_size":{}}})", r.batch);
    ASSERT_TRUE(store_->AddRun(rec).ok());
    ASSERT_TRUE(store_->Transition(r.id, RunState::kRunning, {}).ok());
    testing::WriteFileText(
        dir_.File(r.id),
        fmt::format("{{\"seq\":0,\"kind\":\"end\",\"target_step\":{}}}\n", r.target_step));
    ASSERT_TRUE(store_->IngestMetrics(r.id, 1, dir_.File(r.id)).ok());
  }
  auto db = Reader();
  ASSERT_NE(db, nullptr);
  auto st = db->Prepare(
      "SELECT batch_size, run_id, target_step, runs_reached FROM best_run_per_batch "
      "ORDER BY batch_size");
  ASSERT_TRUE(st.ok());
  std::vector<std::string> rows;
  while (*st->Step()) {
    rows.push_back(fmt::format("{} {} {} {}", st->ColumnInt(0), st->ColumnText(1), st->ColumnInt(2),
                               st->ColumnInt(3)));
  }
  EXPECT_EQ(rows, (std::vector<std::string>{"64 b 700 2", "1024 e 300 1"}));
}

TEST(RunStateTest, NamesRoundTripAndClassify) {
  for (RunState s : {RunState::kPending, RunState::kRunning, RunState::kCompleted,
                     RunState::kTargetReached, RunState::kDiverged, RunState::kBudgetExhausted,
                     RunState::kFailed, RunState::kTimedOut, RunState::kCancelled}) {
    auto parsed = ParseRunState(RunStateName(s));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, s);
  }
  EXPECT_STREQ(RunStateName(RunState::kTargetReached), "target_reached");
  EXPECT_FALSE(IsTerminal(RunState::kRunning));
  EXPECT_TRUE(IsTerminal(RunState::kCancelled));
  EXPECT_TRUE(IsFinished(RunState::kDiverged));
  EXPECT_FALSE(IsFinished(RunState::kFailed));
  auto bad = ParseRunState("done");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("target_reached"), std::string::npos);
}

// The single-writer lock belongs to the database: a second writer of the same file is refused
// (whatever runs folder or sweep it would use) until the first one closes, then it may write.
TEST_F(StoreTest, OneWriterPerDatabase) {
  auto second = Store::Open(path_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(second.status().message().find("another batchlab is writing the database"),
            std::string::npos)
      << second.status().message();
  EXPECT_NE(second.status().message().find(fmt::format("pid {}", getpid())), std::string::npos);
  auto other_db = Store::Open(dir_.File("other.db"));  // another database: its own lock
  EXPECT_TRUE(other_db.ok()) << other_db.status().message();
  store_.reset();
  auto after = Store::Open(path_);
  EXPECT_TRUE(after.ok()) << after.status().message();
}

TEST_F(StoreTest, DatabaseIdIsStableAndAttemptFoldersAreRecorded) {
  const std::string id = store_->database_id();
  EXPECT_EQ(id.size(), 16u);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos);
  auto sweep = store_->CreateSweep("s", "{}", "h");
  ASSERT_TRUE(sweep.ok());
  ASSERT_TRUE(store_->AddRun(Run(sweep->id, "r1")).ok());
  ASSERT_TRUE(store_->StartAttempt("r1", "/runs/a1").ok());
  ASSERT_TRUE(store_->Transition("r1", RunState::kFailed, {1, "x"}).ok());
  ASSERT_TRUE(store_->StartAttempt("r1", "/runs/a2").ok());
  EXPECT_EQ(**store_->AttemptDir("r1", 1), "/runs/a1");
  EXPECT_EQ(**store_->AttemptDir("r1", 2), "/runs/a2");
  EXPECT_FALSE(store_->AttemptDir("r1", 3)->has_value());
  store_.reset();
  auto reopened = Store::Open(path_);
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ((*reopened)->database_id(), id);
  auto other = Store::Open(dir_.File("other.db"));
  ASSERT_TRUE(other.ok());
  EXPECT_NE((*other)->database_id(), id);
}

}  // namespace
}  // namespace batchlab::results
