// The real `batchlab results ...` binary on a real database: output, filters, formats and the
// exit codes (0 ok, 2 bad input) of list, show, query, export and migrate.
#include <sys/wait.h>

#include <fmt/core.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <sstream>
#include <regex>
#include <string>
#include <vector>

#include "results/database.h"
#include "results/schema.h"
#include "results/store.h"
#include "tests/support/file_text.h"
#include "tests/support/temp_dir.h"

namespace batchlab::results {
namespace {

using testing::ReadFileText;
using testing::TempDir;
using testing::WriteFileText;

struct Result {
  int code = -1;
  std::string out, err;
};

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

class ResultsCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = dir_.File("batchlab.db");
    auto store = Store::Open(db_);
    ASSERT_TRUE(store.ok()) << store.status().message();
    auto sweep = (*store)->CreateSweep("quickstart", "{}", "h");
    ASSERT_TRUE(sweep.ok());
    int ordinal = 0;
    for (int batch : {64, 256, 1024}) {
      for (const char* rule : {"none", "linear"}) {
        RunRecord r;
        r.id = fmt::format("{:04d}{}aaaaaaaaaa", batch, rule[0]);
        r.sweep_id = sweep->id;
        r.ordinal = ordinal++;
        r.params = {{"batch_size", std::to_string(batch)},
                    {"lr.rule", fmt::format("\"{}\"", rule)}};
        r.config_json = fmt::format(
            R"({{"batch_size":{},"nodes":1,"world_size":1,"lr":{{"rule":"{}"}}}})", batch, rule);
        ASSERT_TRUE((*store)->AddRun(r).ok());
        ASSERT_TRUE((*store)->Transition(r.id, RunState::kRunning, {}).ok());
        const std::string metrics = dir_.File(r.id + ".jsonl");
        WriteFileText(metrics,
                  fmt::format("{{\"seq\":0,\"kind\":\"step\",\"step\":1,\"loss\":2.0}}\n"
                              "{{\"seq\":1,\"kind\":\"end\",\"outcome\":\"completed\",\"steps\":"
                              "{},\"seconds\":1.5,\"final_test_accuracy\":0.{}}}\n",
                              60000 / batch, 80 + ordinal));
        ASSERT_TRUE((*store)->IngestMetrics(r.id, 1, metrics).ok());
        ASSERT_TRUE((*store)->Transition(r.id, RunState::kCompleted, {0, ""}).ok());
      }
    }
  }

  Result Run(const std::vector<std::string>& args, const std::string& db = "") {
    std::string cmd = Quote(BATCHLAB_BINARY) + " --db " + Quote(db.empty() ? db_ : db);
    for (const auto& a : args) cmd += " " + Quote(a);
    const std::string out = dir_.File("stdout"), err = dir_.File("stderr");
    cmd += " >" + Quote(out) + " 2>" + Quote(err);
    const int status = std::system(cmd.c_str());
    Result r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = ReadFileText(out);
    r.err = ReadFileText(err);
    return r;
  }

  static int Lines(const std::string& s) {
    int n = 0;
    for (char c : s) n += c == '\n';
    return n;
  }

  TempDir dir_;
  std::string db_;
};

TEST_F(ResultsCliTest, ListShowsTheQuickstartColumns) {
  Result r = Run({"results", "list", "--sweep", "quickstart"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* col : {"run_id", "batch_size", "nodes", "world_size", "lr_rule", "state",
                          "final_test_accuracy", "seconds"}) {
    EXPECT_NE(r.out.find(col), std::string::npos) << col << "\n" << r.out;
  }
  EXPECT_NE(r.out.find("completed"), std::string::npos);
  EXPECT_NE(r.out.find("(6 runs)"), std::string::npos) << r.out;
  EXPECT_EQ(Lines(r.out), 2 + 6 + 1);
}

TEST_F(ResultsCliTest, WhereFiltersAreBoundNotPasted) {
  Result r = Run({"results", "list", "--where", "batch_size>=256", "--where", "lr_rule=linear",
                  "--format", "csv", "--columns", "run_id,batch_size,lr_rule"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out,
            "run_id,batch_size,lr_rule\n0256laaaaaaaaaa,256,linear\n"
            "1024laaaaaaaaaa,1024,linear\n");
  Result inject =
      Run({"results", "list", "--where", "lr_rule=\"x' OR '1'='1\"", "--format", "csv"});
  ASSERT_EQ(inject.code, 0) << inject.err;
  EXPECT_EQ(Lines(inject.out), 1);  // header only: the text was a value, not SQL
  // Unquoted, the words after the value are neither a value nor a comparison: refused.
  Result loose = Run({"results", "list", "--where", "lr_rule=x' OR '1'='1", "--format", "csv"});
  EXPECT_EQ(loose.code, 2) << loose.out;
  EXPECT_TRUE(loose.out.empty()) << loose.out;
  Result like = Run({"results", "list", "--where", "lr_rule like lin%", "--format", "json"});
  ASSERT_EQ(like.code, 0) << like.err;
  auto rows = nlohmann::json::parse(like.out);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_TRUE(rows[0]["batch_size"].is_number_integer());
  EXPECT_EQ(rows[0]["lr_rule"], "linear");
  EXPECT_EQ(rows[0]["state"], "completed");
  EXPECT_EQ(rows[0]["sweep"], "quickstart");  // no --sweep: each row says its sweep
}

TEST_F(ResultsCliTest, DottedNamesFilterOnSweptParameters) {
  Result r = Run({"results", "list", "--where", "lr.rule=linear", "--where", "batch_size<1024",
                  "--format", "csv", "--columns", "run_id"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "run_id\n0064laaaaaaaaaa\n0256laaaaaaaaaa\n");
  Result unknown = Run({"results", "list", "--where", "optimizer.momentum>0"});
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.err.find("unknown swept parameter 'optimizer.momentum'"), std::string::npos)
      << unknown.err;
  EXPECT_NE(unknown.err.find("batch_size, lr.rule"), std::string::npos) << unknown.err;
}

TEST_F(ResultsCliTest, BadInputExitsTwoNamingTheProblem) {
  Result col = Run({"results", "list", "--where", "batchsize>=1"});
  EXPECT_EQ(col.code, 2);
  EXPECT_NE(col.err.find("unknown column 'batchsize'"), std::string::npos) << col.err;
  EXPECT_NE(col.err.find("valid columns"), std::string::npos);
  Result op = Run({"results", "list", "--where", "batch_size=>1"});
  EXPECT_EQ(op.code, 2);
  EXPECT_NE(op.err.find("bad operator '=>'"), std::string::npos) << op.err;
  EXPECT_EQ(Run({"results", "list", "--columns", "run_id,acc"}).code, 2);
  EXPECT_EQ(Run({"results", "list", "--state", "finished"}).code, 2);
  EXPECT_EQ(Run({"results", "list", "--format", "xml"}).code, 2);
  Result sweep = Run({"results", "list", "--sweep", "nope"});
  EXPECT_EQ(sweep.code, 2);
  EXPECT_NE(sweep.err.find("quickstart (v1)"), std::string::npos) << sweep.err;
  EXPECT_EQ(Run({"results", "show", "ffffffff"}).code, 2);
  EXPECT_EQ(
      Run({"results", "export", "--sweep", "quickstart", "--what", "steps", "--format", "csv"})
          .code,
      2);
  EXPECT_EQ(Run({"results", "list"}, dir_.File("absent.db")).code, 2);
  EXPECT_FALSE(std::filesystem::exists(dir_.File("absent.db")));
  WriteFileText(dir_.File("text.db"), std::string(2048, 'z'));
  Result text = Run({"results", "list"}, dir_.File("text.db"));
  EXPECT_EQ(text.code, 2);
  EXPECT_NE(text.err.find("not a batchlab results database"), std::string::npos) << text.err;
}

TEST_F(ResultsCliTest, WhereJoinsComparisonsWithAndOrAndCommas) {
  // Each of these returned 0 runs with exit 0: the rest of the text was read as one value.
  const std::string both = "run_id\n0256laaaaaaaaaa\n1024laaaaaaaaaa\n";
  for (const char* where : {"batch_size>=256 and lr_rule=linear", "batch_size>=256 AND lr_rule=linear",
                            "batch_size>=256, lr_rule=linear"}) {
    Result r = Run({"results", "list", "--where", where, "--format", "csv", "--columns", "run_id"});
    ASSERT_EQ(r.code, 0) << where << ": " << r.err;
    EXPECT_EQ(r.out, both) << where;
  }
  Result either = Run({"results", "list", "--where", "batch_size=64 or batch_size=1024 and "
                       "lr_rule=none", "--format", "csv", "--columns", "run_id"});
  ASSERT_EQ(either.code, 0) << either.err;
  EXPECT_EQ(either.out, "run_id\n0064naaaaaaaaaa\n0064laaaaaaaaaa\n1024naaaaaaaaaa\n");
  // A numeric column compared with a word matches nothing: an error naming the expression.
  for (const char* where : {"batch_size>=abc", "batch_size>=256 nodes=1", "(nodes=1)"}) {
    Result bad = Run({"results", "list", "--where", where});
    EXPECT_EQ(bad.code, 2) << where << ": " << bad.out;
    EXPECT_TRUE(bad.out.empty()) << bad.out;
    EXPECT_NE(bad.err.find(std::string("--where '") + where + "'"), std::string::npos) << bad.err;
  }
}

TEST_F(ResultsCliTest, SweepListCountsCancelledRunsApartFromFailedOnes) {
  {
    auto store = Store::Open(db_);
    ASSERT_TRUE(store.ok()) << store.status().message();
    auto sweep = (*store)->CreateSweep("stopped", "{}", "h2");
    ASSERT_TRUE(sweep.ok());
    int ordinal = 0;
    for (RunState end : {RunState::kCancelled, RunState::kCancelled, RunState::kFailed}) {
      RunRecord r;
      r.id = fmt::format("{:04d}cccccccccccc", ordinal);
      r.sweep_id = sweep->id;
      r.ordinal = ordinal++;
      r.config_json = R"({"batch_size":64,"nodes":1,"world_size":1})";
      ASSERT_TRUE((*store)->AddRun(r).ok());
      ASSERT_TRUE((*store)->Transition(r.id, RunState::kRunning, {}).ok());
      ASSERT_TRUE((*store)->Transition(r.id, end, {1, "stopped"}).ok());
    }
  }
  Result r = Run({"sweep", "list", "--format", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 2u) << r.out;
  EXPECT_EQ(j[1]["sweep"], "stopped");
  EXPECT_EQ(j[1]["cancelled"], 2) << r.out;
  EXPECT_EQ(j[1]["failed"], 1) << r.out;  // was 3: cancelled runs counted as failed
  EXPECT_EQ(j[0]["cancelled"], 0) << r.out;
}

TEST_F(ResultsCliTest, ShowPrintsSummaryMetricsEventsAndConfig) {
  Result r = Run({"results", "show", "0256n"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("run 0256naaaaaaaaaa"), std::string::npos) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("transition +running +completed"))) << r.out;
  EXPECT_NE(r.out.find("loss"), std::string::npos);
  EXPECT_NE(r.out.find("\"batch_size\": 256"), std::string::npos);
  EXPECT_EQ(Run({"results", "show", "0256"}).code, 2);  // ambiguous prefix
  // Each time figure says what it measures (analyze's train_seconds is another one).
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\ntarget_seconds +\\S* +wall clock, the run's start "
                                                  "to the evaluation that met the target")))
      << r.out;

  // --format json: one object with the summary, metrics, events and config.
  Result j = Run({"results", "show", "0256n", "--format", "json"});
  ASSERT_EQ(j.code, 0) << j.err;
  const nlohmann::json v = nlohmann::json::parse(j.out);
  EXPECT_EQ(v["run"]["run_id"], "0256naaaaaaaaaa");
  EXPECT_EQ(v["config"]["batch_size"], 256);
  ASSERT_EQ(v["events"].size(), 2u);
  EXPECT_EQ(v["events"][1]["to_state"], "completed");
  EXPECT_EQ(v["metrics"][0]["name"], "loss");
}

TEST_F(ResultsCliTest, QueryIsReadOnly) {
  Result r = Run({"results", "query", "SELECT count(*) AS n FROM run_summary", "--format", "csv"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "n\n6\n");
  Result del = Run({"results", "query", "DELETE FROM runs"});
  EXPECT_EQ(del.code, 2);
  EXPECT_NE(del.err.find("read-only"), std::string::npos) << del.err;
  Result syntax = Run({"results", "query", "SELEC 1"});
  EXPECT_EQ(syntax.code, 2);
  EXPECT_NE(syntax.err.find("syntax error"), std::string::npos) << syntax.err;
  Result two = Run({"results", "query", "SELECT 1; DROP TABLE runs"});
  EXPECT_EQ(two.code, 2);
  EXPECT_NE(two.err.find("one SQL statement at a time"), std::string::npos) << two.err;
  Result comment = Run({"results", "query", "SELECT 7 AS x; -- trailing note", "--format", "csv"});
  EXPECT_EQ(comment.code, 0) << comment.err;
  EXPECT_EQ(comment.out, "x\n7\n");
  auto db = OpenReadOnly(db_);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(*(*db)->QueryInt("SELECT count(*) FROM runs"), 6);
}

TEST_F(ResultsCliTest, ExportWritesRunsAndMetrics) {
  const std::string runs = dir_.File("runs.csv"), metrics = dir_.File("m.jsonl");
  Result r = Run({"results", "export", "--sweep", "quickstart", "--what", "runs", "--format", "csv",
                  "--out", runs});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string csv = ReadFileText(runs);
  EXPECT_EQ(Lines(csv), 7);
  EXPECT_EQ(csv.rfind("sweep,sweep_version,run_id,", 0), 0u) << csv.substr(0, 80);
  Result m = Run({"results", "export", "--sweep", "quickstart", "--what", "metrics", "--format",
                  "jsonl", "--out", metrics});
  ASSERT_EQ(m.code, 0) << m.err;
  std::istringstream lines(ReadFileText(metrics));
  int n = 0;
  for (std::string line; std::getline(lines, line); ++n) {
    auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j["name"], "loss");
    EXPECT_DOUBLE_EQ(j["value"].get<double>(), 2.0);
  }
  EXPECT_EQ(n, 6);
  EXPECT_FALSE(std::filesystem::exists(metrics + ".partial"));
}

// `--out DIR` (a folder) and an unknown sweep fail without leaving DIR.partial (or any file).
TEST_F(ResultsCliTest, ExportLeavesNoPartialFile) {
  const std::string folder = dir_.File("out");
  std::filesystem::create_directory(folder);
  Result r = Run({"results", "export", "--sweep", "quickstart", "--what", "runs", "--format", "csv",
                  "--out", folder});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--out " + folder + ": is a folder"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(folder + ".partial"));
  const std::string file = dir_.File("x.csv");
  Result unknown = Run({"results", "export", "--sweep", "nope", "--what", "runs", "--format",
                        "csv", "--out", file});
  EXPECT_EQ(unknown.code, 2) << unknown.err;
  EXPECT_FALSE(std::filesystem::exists(file + ".partial"));
  EXPECT_FALSE(std::filesystem::exists(file));
}

TEST_F(ResultsCliTest, NewerSchemaIsRefusedAndOldOneMigrated) {
  const std::string old_db = dir_.File("v1.db");
  {
    auto db = Database::Open(old_db, Database::Mode::kReadWrite);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(CreateSchema(**db, 1).ok());
  }
  Result before = Run({"results", "list"}, old_db);
  EXPECT_EQ(before.code, 2);
  EXPECT_NE(before.err.find("results migrate"), std::string::npos) << before.err;
  Result migrate = Run({"results", "migrate"}, old_db);
  ASSERT_EQ(migrate.code, 0) << migrate.err;
  EXPECT_NE(migrate.out.find(fmt::format("v1 -> v{}", kSchemaVersion)), std::string::npos);
  EXPECT_EQ(Run({"results", "list"}, old_db).code, 0);

  {
    auto db = Database::Open(db_, Database::Mode::kReadWrite);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Exec("PRAGMA user_version = 99").ok());
  }
  Result newer = Run({"results", "list"});
  EXPECT_EQ(newer.code, 2);
  EXPECT_NE(newer.err.find("newer batchlab"), std::string::npos) << newer.err;
  EXPECT_EQ(Run({"results", "migrate"}).code, 2);
}

}  // namespace
}  // namespace batchlab::results
