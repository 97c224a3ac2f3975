// Exactly-once ingest of metrics files into a real SQLite file: re-reading adds nothing, a
// truncated last line is retried, a corrupt line becomes one event, attempts stay apart, the
// `end` line fills the summary, and a reader hammering the file during ingest is never locked.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "results/database.h"
#include "results/metrics_ingest.h"
#include "results/schema.h"
#include "results/store.h"
#include "results/utf8_text.h"
#include "tests/support/file_text.h"
#include "tests/support/temp_dir.h"

namespace batchlab::results {
namespace {

using testing::TempDir;
using testing::WriteFileText;

std::string StepLine(int seq, int step, double loss) {
  return fmt::format(
      "{{\"seq\":{},\"kind\":\"step\",\"step\":{},\"samples\":{},\"loss\":{},\"lr\":0.1}}\n", seq,
      step, step * 64, loss);
}

class IngestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_path_ = dir_.File("batchlab.db");
    metrics_ = dir_.File("metrics.jsonl");
    auto store = Store::Open(db_path_);
    ASSERT_TRUE(store.ok()) << store.status().message();
    store_ = std::move(*store);
    auto sweep = store_->CreateSweep("s", "{}", "hash");
    ASSERT_TRUE(sweep.ok());
    RunRecord run;
    run.id = "run1";
    run.sweep_id = sweep->id;
    run.config_json = R"({"batch_size":64,"lr":{"rule":"linear"}})";
    ASSERT_TRUE(store_->AddRun(run).ok());
    ASSERT_TRUE(store_->Transition("run1", RunState::kRunning, {}).ok());
  }

  int64_t Count(const std::string& sql) {
    auto db = OpenReadOnly(db_path_);
    EXPECT_TRUE(db.ok()) << db.status().message();
    auto n = (*db)->QueryInt(sql);
    EXPECT_TRUE(n.ok()) << n.status().message();
    return n.ok() ? *n : -1;
  }

  IngestStats Ingest(int attempt = 1) {
    auto stats = store_->IngestMetrics("run1", attempt, metrics_);
    EXPECT_TRUE(stats.ok()) << stats.status().message();
    return stats.ok() ? *stats : IngestStats{};
  }

  TempDir dir_;
  std::string db_path_, metrics_;
  std::unique_ptr<Store> store_;
};

TEST_F(IngestTest, RereadingAFileAddsNothing) {
  WriteFileText(metrics_, "{\"seq\":0,\"kind\":\"start\",\"host\":\"node7\"}\n" + StepLine(1, 1, 2.3) +
                          StepLine(2, 2, 2.1) +
                          "{\"seq\":3,\"kind\":\"eval\",\"step\":2,\"test_accuracy\":0.5}\n");
  IngestStats first = Ingest();
  EXPECT_EQ(first.lines_read, 4);
  EXPECT_EQ(first.lines_stored, 4);
  EXPECT_EQ(first.values_stored, 2 * 3 + 1);  // samples, loss, lr per step; test_accuracy
  IngestStats again = Ingest();
  EXPECT_EQ(again.lines_stored, 0);
  EXPECT_EQ(again.values_stored, 0);
  EXPECT_EQ(Count("SELECT count(*) FROM metrics"), 7);
  EXPECT_EQ(Count("SELECT count(*) FROM run_metrics WHERE name = 'loss' AND step = 2 AND "
                  "value = 2.1"),
            1);
  EXPECT_EQ(Count("SELECT count(*) FROM runs WHERE host = 'node7'"), 1);
}

TEST_F(IngestTest, LostCursorStillStoresEachSeqOnce) {
  WriteFileText(metrics_, StepLine(0, 1, 2.0) + StepLine(1, 2, 1.9));
  Ingest();
  {  // Forget the cursor, as after a migration from a schema without cursors.
    auto db = Database::Open(db_path_, Database::Mode::kReadWrite);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Exec("DELETE FROM ingest_cursors").ok());
  }
  IngestStats again = Ingest();
  EXPECT_EQ(again.lines_read, 2);
  EXPECT_EQ(again.values_stored, 0);
  EXPECT_EQ(Count("SELECT count(*) FROM metrics"), 6);
}

TEST_F(IngestTest, TruncatedLastLineIsRetriedLater) {
  const std::string second = StepLine(1, 2, 1.9);
  WriteFileText(metrics_, StepLine(0, 1, 2.0) + second.substr(0, 20));
  IngestStats first = Ingest();
  EXPECT_EQ(first.lines_read, 1);
  EXPECT_EQ(first.corrupt_lines, 0);
  EXPECT_EQ(Count("SELECT count(*) FROM metrics"), 3);
  WriteFileText(metrics_, second.substr(20), /*append=*/true);
  IngestStats rest = Ingest();
  EXPECT_EQ(rest.lines_read, 1);
  EXPECT_EQ(rest.lines_stored, 1);
  EXPECT_EQ(Count("SELECT count(*) FROM metrics"), 6);
  EXPECT_EQ(Count("SELECT count(*) FROM events WHERE kind = 'corrupt_metrics_line'"), 0);
}

TEST_F(IngestTest, CorruptLineBecomesOneEventAndIsSkipped) {
  WriteFileText(metrics_, StepLine(0, 1, 2.0) + "{\"seq\":1,\"kind\":\"st\x01ep, garbage\n" +
                          "[1,2,3]\n" + StepLine(2, 2, 1.8));
  IngestStats first = Ingest();
  EXPECT_EQ(first.corrupt_lines, 2);
  EXPECT_EQ(first.lines_stored, 2);
  EXPECT_EQ(Count("SELECT count(*) FROM metrics"), 6);
  EXPECT_EQ(Count("SELECT count(*) FROM events WHERE kind = 'corrupt_metrics_line' AND "
                  "message LIKE '%line 2%not valid JSON%'"),
            1);
  Ingest();  // re-reading records no second event
  EXPECT_EQ(Count("SELECT count(*) FROM events WHERE kind = 'corrupt_metrics_line'"), 2);
}

TEST_F(IngestTest, AttemptsAreKeptApartAndViewsShowTheCurrentOne) {
  WriteFileText(metrics_, StepLine(0, 1, 2.0) + StepLine(1, 2, 1.9));
  Ingest(1);
  ASSERT_TRUE(store_->Transition("run1", RunState::kFailed, {1, "killed"}).ok());
  ASSERT_TRUE(store_->Transition("run1", RunState::kRunning, {}).ok());
  const std::string second = dir_.File("attempt2.jsonl");
  WriteFileText(second, StepLine(0, 1, 2.2));
  auto stats = store_->IngestMetrics("run1", 2, second);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->values_stored, 3);  // same seq as attempt 1, still stored: other attempt
  EXPECT_EQ(Count("SELECT count(*) FROM metrics"), 9);
  EXPECT_EQ(Count("SELECT count(*) FROM run_metrics"), 3);
  EXPECT_EQ(Count("SELECT count(*) FROM run_metrics WHERE attempt = 2"), 3);
}

TEST_F(IngestTest, EndLineFillsTheRunSummary) {
  WriteFileText(metrics_,
            StepLine(0, 1, 2.0) +
                "{\"seq\":1,\"kind\":\"end\",\"outcome\":\"target_reached\",\"steps\":40,"
                "\"samples\":2560,\"seconds\":3.5,\"target_step\":40,\"target_samples\":2560,"
                "\"target_seconds\":3.5,\"final_test_loss\":0.4,\"final_test_accuracy\":0.86}\n");
  IngestStats s = Ingest();
  EXPECT_TRUE(s.saw_end);
  EXPECT_TRUE(Ingest().saw_end);  // remembered by the cursor
  ASSERT_TRUE(store_->Transition("run1", RunState::kTargetReached, {3, ""}).ok());
  EXPECT_EQ(Count("SELECT count(*) FROM run_summary WHERE state = 'target_reached' AND "
                  "exit_code = 3 AND steps = 40 AND target_step = 40 AND "
                  "final_test_accuracy = 0.86 AND outcome = 'target_reached'"),
            1);
  EXPECT_EQ(Count("SELECT count(*) FROM best_run_per_batch WHERE run_id = 'run1' AND "
                  "batch_size = 64"),
            1);
}

TEST_F(IngestTest, StartLineFactsAreStoredWithTheRun) {
  WriteFileText(metrics_,
            "{\"seq\":0,\"kind\":\"start\",\"parameters\":101770,\"tokens_per_step\":"
            "8192,\"flops_per_step\":4.5e12,\"host\":\"n1\"}\n" +
                StepLine(1, 1, 2.0));
  Ingest();
  EXPECT_EQ(Count("SELECT count(*) FROM run_summary WHERE run_id = 'run1' AND parameters = "
                  "101770 AND tokens_per_step = 8192 AND flops_per_step = 4.5e12 AND host = 'n1'"),
            1);
  EXPECT_EQ(Count("SELECT count(*) FROM run_metrics WHERE name = 'parameters'"), 0);

  // A retry's start line without them (or with 0, "unknown") keeps the facts already known.
  ASSERT_TRUE(store_->Transition("run1", RunState::kFailed, {1, "killed"}).ok());
  ASSERT_TRUE(store_->Transition("run1", RunState::kRunning, {}).ok());
  const std::string second = dir_.File("attempt2.jsonl");
  WriteFileText(second,
            "{\"seq\":0,\"kind\":\"start\",\"parameters\":0,\"tokens_per_step\":"
            "\"many\"}\n");
  ASSERT_TRUE(store_->IngestMetrics("run1", 2, second).ok());
  EXPECT_EQ(Count("SELECT parameters FROM runs WHERE id = 'run1'"), 101770);
  EXPECT_EQ(Count("SELECT tokens_per_step FROM runs WHERE id = 'run1'"), 8192);
}

// slurm.elastic (schema v7): each attempt's rank count from its start line, and the checkpoint
// it resumed from its resume line, so the analysis counts each step at the K that trained it.
TEST_F(IngestTest, AttemptsRecordTheirRankCountAndTheCheckpointTheyResumed) {
  ASSERT_TRUE(store_->Transition("run1", RunState::kFailed, {1, "killed"}).ok());
  ASSERT_TRUE(store_->StartAttempt("run1", dir_.File("attempt-2")).ok());
  WriteFileText(metrics_, "{\"seq\":0,\"kind\":\"start\",\"world_size\":3}\n" +
                          StepLine(1, 1, 2.0) + StepLine(2, 2, 1.9));
  ASSERT_TRUE(store_->IngestMetrics("run1", 2, metrics_).ok());
  ASSERT_TRUE(store_->Transition("run1", RunState::kFailed, {1, "host lost"}).ok());
  ASSERT_TRUE(store_->StartAttempt("run1", dir_.File("attempt-3")).ok());
  const std::string third = dir_.File("attempt3.jsonl");
  WriteFileText(third,
            "{\"seq\":2,\"kind\":\"resume\",\"step\":1,\"from_attempt\":2,\"file\":\"c\","
            "\"rejected\":[],\"from_world_size\":3}\n"
            "{\"seq\":3,\"kind\":\"start\",\"world_size\":2}\n" +
                StepLine(4, 2, 1.8));
  ASSERT_TRUE(store_->IngestMetrics("run1", 3, third).ok());
  EXPECT_EQ(Count("SELECT count(*) FROM attempts WHERE attempt = 2 AND world_size = 3 AND "
                  "resumed_from IS NULL AND resumed_step IS NULL"),
            1);
  EXPECT_EQ(Count("SELECT count(*) FROM attempts WHERE attempt = 3 AND world_size = 2 AND "
                  "resumed_from = 2 AND resumed_step = 1"),
            1);
}

TEST_F(IngestTest, StartLineWithoutFactsLeavesThemUnknown) {
  WriteFileText(metrics_, "{\"seq\":0,\"kind\":\"start\",\"parameters\":-3}\n");
  Ingest();
  EXPECT_EQ(Count("SELECT count(*) FROM runs WHERE parameters IS NULL AND tokens_per_step IS "
                  "NULL AND flops_per_step IS NULL"),
            1);
}

TEST_F(IngestTest, MissingFileHoldsNothingYetAndReplacedFileIsReread) {
  IngestStats none = Ingest();
  EXPECT_EQ(none.lines_read, 0);
  WriteFileText(metrics_, StepLine(0, 1, 2.0) + StepLine(1, 2, 1.9) + StepLine(2, 3, 1.8));
  Ingest();
  WriteFileText(metrics_, StepLine(0, 1, 2.0));  // rewritten, shorter
  IngestStats after = Ingest();
  EXPECT_EQ(after.values_stored, 0);
  EXPECT_EQ(Count("SELECT count(*) FROM events WHERE kind = 'metrics_file_rewound'"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM metrics"), 9);
}

// ---- Metrics files are untrusted: every anomaly is an event and none hides the end line. ----

std::string EndLine(int seq, const std::string& outcome = "completed") {
  return fmt::format(
      "{{\"seq\":{},\"kind\":\"end\",\"outcome\":\"{}\",\"steps\":9,\"samples\":576}}\n", seq,
      outcome);
}

TEST_F(IngestTest, SeqJumpingAheadThenLowerKeepsEveryLineAndTheEndLine) {
  // seq 1000 out of nowhere, then the writer goes on from 3: before the fix lines 3.. and the end
  // line were dropped silently and the run showed no outcome.
  WriteFileText(metrics_, StepLine(1, 1, 2.0) + StepLine(2, 2, 1.9) + StepLine(1000, 3, 1.8) +
                          StepLine(3, 4, 1.7) + StepLine(4, 5, 1.6) + EndLine(5));
  IngestStats s = Ingest();
  EXPECT_EQ(s.lines_stored, 6);
  EXPECT_TRUE(s.saw_end);
  EXPECT_EQ(s.end_outcome, "completed");
  EXPECT_EQ(Count("SELECT count(*) FROM run_metrics WHERE name = 'loss'"), 5);
  EXPECT_EQ(Count("SELECT steps FROM runs WHERE id = 'run1' AND outcome = 'completed'"), 9);
  EXPECT_EQ(Count("SELECT count(*) FROM events WHERE kind = 'seq_not_increasing' AND "
                  "message LIKE '%seq 3 after seq 1000%'"),
            1);
}

TEST_F(IngestTest, SeqGoingBackwardsAndEndLineWithLowSeqAreEventsNotDrops) {
  WriteFileText(metrics_, StepLine(5, 1, 2.0) + StepLine(6, 2, 1.9) + StepLine(6, 3, 1.8) +
                          StepLine(2, 4, 1.7) + EndLine(1, "target_reached"));
  IngestStats s = Ingest();
  EXPECT_EQ(s.end_outcome, "target_reached");
  EXPECT_EQ(Count("SELECT count(*) FROM runs WHERE outcome = 'target_reached'"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM events WHERE kind = 'seq_not_increasing'"), 3);
  // The repeated seq 6 keeps its first values; seq 2 is new and stored.
  EXPECT_EQ(Count("SELECT count(*) FROM run_metrics WHERE name = 'loss' AND seq = 6 AND "
                  "value = 1.9"),
            1);
  EXPECT_EQ(Count("SELECT count(*) FROM run_metrics WHERE name = 'loss' AND seq = 2"), 1);
  Ingest();  // re-reading adds no second round of events
  EXPECT_EQ(Count("SELECT count(*) FROM events WHERE kind = 'seq_not_increasing'"), 3);
}

TEST_F(IngestTest, BinaryGarbageIsStoredAsValidUtf8) {
  const std::string garbage(
      "\xff\xfe\x00\x01"
      "binary\xc3\x28 \xed\xa0\x80 ok\n",
      20);
  WriteFileText(metrics_, StepLine(0, 1, 2.0) + garbage + EndLine(1));
  IngestStats s = Ingest();
  EXPECT_EQ(s.corrupt_lines, 1);
  EXPECT_TRUE(s.saw_end);
  auto db = OpenReadOnly(db_path_);
  ASSERT_TRUE(db.ok());
  auto st = (*db)->Prepare("SELECT message FROM events WHERE kind = 'corrupt_metrics_line'");
  ASSERT_TRUE(st.ok());
  ASSERT_TRUE(*st->Step());
  const std::string message = st->ColumnText(0);
  EXPECT_TRUE(IsValidUtf8Text(message)) << message;
  EXPECT_NE(message.find("\\xff\\xfe\\x00\x01"
                         "binary\\xc3("),
            std::string::npos)
      << message;
  // Every text value in the database is valid UTF-8 by SQLite's own reading.
  EXPECT_EQ(Count("SELECT count(*) FROM events WHERE message != CAST(CAST(message AS BLOB) AS "
                  "TEXT) OR instr(message, char(0)) > 0"),
            0);
}

TEST_F(IngestTest, NonFiniteValuesAreStoredAndRecorded) {
  WriteFileText(metrics_, StepLine(0, 1, 2.0) +
                          "{\"seq\":1,\"kind\":\"step\",\"step\":2,\"loss\":NaN,\"lr\":0.1}\n" +
                          "{\"seq\":2,\"kind\":\"step\",\"step\":3,\"loss\":-Infinity}\n" +
                          "{\"seq\":3,\"kind\":\"step\",\"step\":4,\"loss\":1e999}\n" +
                          "{\"seq\":4,\"kind\":\"end\",\"outcome\":\"diverged\","
                          "\"final_test_loss\":NaN,\"steps\":4}\n");
  IngestStats s = Ingest();
  EXPECT_EQ(s.corrupt_lines, 0);
  EXPECT_EQ(s.end_outcome, "diverged");
  EXPECT_EQ(Count("SELECT count(*) FROM events WHERE kind = 'non_finite_value'"), 4);
  EXPECT_EQ(Count("SELECT count(*) FROM run_metrics WHERE name = 'loss' AND seq = 1 AND "
                  "value IS NULL"),
            1);
  EXPECT_EQ(Count("SELECT count(*) FROM run_metrics WHERE name = 'lr' AND seq = 1"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM run_metrics WHERE name = 'loss' AND seq = 2 AND "
                  "value < -1e308"),
            1);
  EXPECT_EQ(Count("SELECT count(*) FROM runs WHERE outcome = 'diverged' AND steps = 4 AND "
                  "final_test_loss IS NULL"),
            1);
}

TEST_F(IngestTest, HugeLineIsSkippedWithoutHidingTheEndLine) {
  const std::string huge = "{\"seq\":1,\"kind\":\"step\",\"note\":\"" +
                           std::string(3 * MetricsIngester::kMaxLineBytes, 'x') + "\"}\n";
  WriteFileText(metrics_, StepLine(0, 1, 2.0) + huge + StepLine(2, 2, 1.9) + EndLine(3));
  IngestStats s = Ingest();
  EXPECT_TRUE(s.saw_end);
  EXPECT_EQ(s.lines_read, 4);
  EXPECT_EQ(Count("SELECT count(*) FROM run_metrics WHERE name = 'loss'"), 2);
  EXPECT_EQ(Count("SELECT count(*) FROM events WHERE kind = 'line_too_long' AND message LIKE "
                  "'%line 2 %'"),
            1);
  EXPECT_LT(Count("SELECT max(length(message)) FROM events"), 1000);  // an excerpt only
}

TEST_F(IngestTest, FinalPassConsumesATruncatedLastLine) {
  WriteFileText(metrics_, StepLine(0, 1, 2.0) + "{\"seq\":1,\"kind\":\"st");
  EXPECT_EQ(Ingest().anomalies, 0);  // live: it may still be being written
  auto final_pass = store_->IngestMetrics("run1", 1, metrics_, IngestPass::kFinal);
  ASSERT_TRUE(final_pass.ok()) << final_pass.status().message();
  EXPECT_EQ(final_pass->anomalies, 2);  // truncated, and then not a valid record
  EXPECT_EQ(Count("SELECT count(*) FROM events WHERE kind = 'truncated_line'"), 1);
  // An end line whose newline never came is still the end line.
  WriteFileText(metrics_, EndLine(2).substr(0, EndLine(2).size() - 1), /*append=*/true);
  auto again = store_->IngestMetrics("run1", 1, metrics_, IngestPass::kFinal);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->end_outcome, "completed");
}

TEST_F(IngestTest, LinesAfterTheEndLineAreEventsAndAFloodIsOnlyCounted) {
  std::string text = EndLine(0);
  for (int i = 1; i <= 150; ++i) text += "garbage\n";
  WriteFileText(metrics_, text);
  IngestStats s = Ingest();
  EXPECT_EQ(s.anomalies, 150);
  EXPECT_EQ(s.end_outcome, "completed");
  EXPECT_EQ(Count("SELECT count(*) FROM events WHERE kind = 'corrupt_metrics_line'"),
            MetricsIngester::kMaxAnomalyEvents);
  EXPECT_EQ(Count("SELECT count(*) FROM events WHERE kind = 'anomalies_not_listed'"), 1);
  EXPECT_EQ(Count("SELECT anomalies FROM ingest_cursors"), 150);
  WriteFileText(metrics_, StepLine(1, 2, 1.0), /*append=*/true);
  Ingest();
  EXPECT_EQ(Count("SELECT count(*) FROM events WHERE kind != 'transition'"),
            MetricsIngester::kMaxAnomalyEvents + 1);
  EXPECT_EQ(Count("SELECT anomalies FROM ingest_cursors"), 151);  // a step after the end line
}

// A file written by the real batchlab-runner (1 rank, 30 steps, eval every 10; kept in
// testdata/): every numeric field of its step/eval lines but seq and step is stored once, and its
// end and start lines fill the summary. Expected counts come from reading the file here.
TEST_F(IngestTest, RealRunnerFileIsStoredCompletely) {
  const std::string path = BATCHLAB_TESTDATA "/runner_metrics.jsonl";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  int64_t expected_values = 0, lines = 0;
  nlohmann::json end, start;
  for (std::string line; std::getline(in, line); ++lines) {
    auto j = nlohmann::json::parse(line);
    if (j["kind"] == "end") end = j;
    if (j["kind"] == "start") start = j;
    if (j["kind"] != "step" && j["kind"] != "eval") continue;
    for (const auto& [key, value] : j.items()) {
      expected_values += value.is_number() && key != "seq" && key != "step";
    }
  }
  ASSERT_TRUE(end.is_object());
  metrics_ = path;
  IngestStats s = Ingest();
  EXPECT_EQ(s.lines_read, lines);
  EXPECT_EQ(s.lines_stored, lines);
  EXPECT_EQ(s.corrupt_lines, 0);
  EXPECT_TRUE(s.saw_end);
  EXPECT_EQ(s.values_stored, expected_values);
  EXPECT_EQ(Count("SELECT count(*) FROM run_metrics"), expected_values);
  EXPECT_EQ(Count(fmt::format("SELECT count(*) FROM run_summary WHERE steps = {} AND "
                              "final_test_accuracy = {} AND outcome = '{}' AND host = '{}'",
                              end["steps"].get<int64_t>(), end["final_test_accuracy"].dump(),
                              end["outcome"].get<std::string>(), start["host"].get<std::string>())),
            1);
  EXPECT_EQ(Count("SELECT count(DISTINCT seq) FROM run_metrics WHERE name = 'test_accuracy'"), 3);
}

TEST_F(IngestTest, UnknownRunIsNotFound) {
  WriteFileText(metrics_, StepLine(0, 1, 2.0));
  auto stats = store_->IngestMetrics("nope", 1, metrics_);
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.status().code(), StatusCode::kNotFound);
}

// A second connection (another thread, read-only) queries the file as fast as it can while the
// store ingests many batches; it must never fail, in particular never with "database is locked".
TEST_F(IngestTest, ReaderDuringIngestIsNeverLocked) {
  std::string text;
  const int kLines = 6 * 4096;
  for (int i = 0; i < kLines; ++i) text += StepLine(i, i + 1, 1.0 / (i + 1));
  WriteFileText(metrics_, text);
  std::atomic<bool> done{false};
  std::atomic<int64_t> reads{0}, failures{0};
  std::string first_failure;
  std::thread reader([&] {
    auto db = OpenReadOnly(db_path_);
    if (!db.ok()) {
      ++failures;
      first_failure = db.status().message();
      return;
    }
    int64_t last = 0;
    while (!done.load() || reads.load() < 3) {
      auto n = (*db)->QueryInt("SELECT count(*) FROM run_metrics WHERE name = 'loss'");
      if (!n.ok() || *n < last) {
        if (failures++ == 0) first_failure = n.ok() ? "count went down" : n.status().message();
        continue;
      }
      last = *n;
      ++reads;
    }
  });
  IngestStats s = Ingest();
  done = true;
  reader.join();
  EXPECT_EQ(s.lines_stored, kLines);
  EXPECT_EQ(failures.load(), 0) << first_failure;
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(Count("SELECT count(*) FROM run_metrics WHERE name = 'loss'"), kLines);
}

// The same from another process (fork; the child opens its own read-only connection): SQLite's
// cross-process locking path, as when `batchlab results list` runs beside a sweep.
TEST_F(IngestTest, ReaderProcessDuringIngestIsNeverLocked) {
  std::string text;
  const int kLines = 6 * 4096;
  for (int i = 0; i < kLines; ++i) text += StepLine(i, i + 1, 1.0 / (i + 1));
  WriteFileText(metrics_, text);
  const std::string done = dir_.File("done"), report = dir_.File("reader-report");
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int64_t reads = 0, failures = 0, last = 0;
    std::string first_failure;
    auto db = OpenReadOnly(db_path_);
    if (!db.ok()) {
      WriteFileText(report, db.status().message());
      _exit(2);
    }
    // Until the parent says the ingest is over (and at least a few reads after that).
    for (int after = 0; after < 3; after += std::filesystem::exists(done) ? 1 : 0) {
      auto n = (*db)->QueryInt("SELECT count(*) FROM run_metrics WHERE name = 'loss'");
      if (!n.ok() || *n < last) {
        if (failures++ == 0) first_failure = n.ok() ? "count went down" : n.status().message();
        continue;
      }
      last = *n;
      ++reads;
    }
    WriteFileText(report, fmt::format("{} reads, {} failures, last count {}; {}", reads, failures, last,
                                  first_failure));
    _exit(failures == 0 && last == kLines ? 0 : 1);
  }
  IngestStats s = Ingest();
  WriteFileText(done, "");
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << testing::ReadFileText(report);
  fmt::print("reader process: {}\n", testing::ReadFileText(report));
  EXPECT_EQ(s.lines_stored, kLines);
}

}  // namespace
}  // namespace batchlab::results
