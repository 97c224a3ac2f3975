// End-to-end tests of `batchlab sweep` with real mpirun processes, a real SQLite file, and
// fake_runner standing in for batchlab-runner at the protocol seam: exit codes, the database left
// untouched by bad input, resume, spec versioning, retry with backoff, timeout, cancel by SIGINT,
// and resume after `kill -9` of the orchestrator.
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <boost/process.hpp>
#include <nlohmann/json.hpp>

#include "results/database.h"
#include "results/schema.h"
#include "tests/orchestrator/end_to_end/process_checks.h"
#include "tests/support/temp_dir.h"

namespace batchlab::orchestrator {
namespace {

namespace bp = boost::process;
namespace fs = boost::filesystem;
using testing::AllGone;
using testing::PidsIn;
using testing::TempDir;
using testing::WaitFor;

struct CliResult {
  int exit_code = -1;
  std::string err;
};

class SweepCliTest : public ::testing::Test {
 protected:
  std::string Db() const { return dir_.path() + "/batchlab.db"; }
  std::string Runs() const { return dir_.path() + "/runs"; }

  std::string WriteSpec(const std::string& name, const std::string& text) {
    std::string path = dir_.path() + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  std::vector<std::string> Args(std::vector<std::string> extra) const {
    std::vector<std::string> a = {"--db", Db()};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }

  CliResult Cli(std::vector<std::string> args) {
    std::string err_path = dir_.path() + "/stderr.txt";
    std::remove(err_path.c_str());  // boost.process opens without truncating
    std::remove((dir_.path() + "/stdout.txt").c_str());
    bp::child c(BATCHLAB_BIN, bp::args(Args(args)), bp::std_out > (dir_.path() + "/stdout.txt"),
                bp::std_err > err_path, bp::std_in < bp::null);
    c.wait();
    CliResult r;
    r.exit_code = c.exit_code();
    std::ifstream in(err_path);
    std::stringstream ss;
    ss << in.rdbuf();
    r.err = ss.str();
    return r;
  }

  std::string Stdout() const {
    std::ifstream in(dir_.path() + "/stdout.txt");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  std::vector<std::string> RunArgs(const std::string& spec, std::vector<std::string> extra = {}) {
    std::vector<std::string> a = {"sweep",    "run",       spec,      "--runs-dir", Runs(),
                                  "--runner", FAKE_RUNNER, "--slots", "2"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }

  // One integer from a read-only query of the database.
  int64_t Query(const std::string& sql) {
    auto db = results::OpenReadOnly(Db());
    EXPECT_TRUE(db.ok()) << db.status().message();
    if (!db.ok()) return -1;
    auto v = (*db)->QueryInt(sql);
    EXPECT_TRUE(v.ok()) << v.status().message();
    return v.ok() ? *v : -1;
  }

  static std::string Spec(const std::string& name, const std::string& env,
                          const std::string& extra = "") {
    return fmt::format(R"({{"name": "{}", "base": {{"mode": "noop"}},
        "axes": {{"batch_size": [64, 128], "nodes": [1, 2]}},
        "launch": {{"env": {{{}}}}}{}}})",
                       name, env, extra);
  }

  TempDir dir_;
};

TEST_F(SweepCliTest, RunsASweepWithOneAndTwoRankJobsAndResumesWithoutRerunning) {
  std::string spec = WriteSpec("s.json", Spec("s", R"("FAKE_RUNNER_SECONDS": "0.05")"));
  CliResult r = Cli(RunArgs(spec));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Query("SELECT count(*) FROM runs"), 4);
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE state = 'completed' AND attempt = 1 AND "
                  "exit_code = 0"),
            4);
  // Every attempt's metrics were ingested: start + 5 steps + end, with the end seen.
  EXPECT_EQ(Query("SELECT count(*) FROM ingest_cursors WHERE attempt = 1 AND lines = 7 AND "
                  "saw_end = 1"),
            4);
  EXPECT_EQ(Query("SELECT count(DISTINCT seq) FROM metrics"), 5);  // steps 1..5 (seq 1..5)
  // The 2-rank runs ran under mpirun -np 2 (world_size from the start line is not stored, but
  // the resolved config the runner read says so).
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE world_size = 2"), 2);

  CliResult again = Cli(RunArgs(spec));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("4 of 4 runs already finished; skipped"), std::string::npos)
      << again.err;
  EXPECT_EQ(Query("SELECT max(attempt) FROM runs"), 1);  // nothing ran twice
  EXPECT_EQ(Query("SELECT count(*) FROM sweeps"), 1);

  CliResult status = Cli({"sweep", "status", "s"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_NE(Stdout().find("4 runs: 4 completed"), std::string::npos) << Stdout();
}

TEST_F(SweepCliTest, BadSpecExits2AndNeverCreatesTheDatabase) {
  std::string bad = WriteSpec("bad.json", R"({"name": "s", "axes": {"batch_size": [64, 0]}})");
  CliResult r = Cli(RunArgs(bad));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("axes.batch_size[1]: 0 is not a positive integer"), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(Db()));
  EXPECT_FALSE(fs::exists(Runs()));

  std::string not_json = WriteSpec("nj.json", R"({"name": "s", )");
  EXPECT_EQ(Cli(RunArgs(not_json)).exit_code, 2);
  std::string unknown = WriteSpec("u.json", R"({"name": "s", "base": {"batch_size": 8}, "x": 1})");
  EXPECT_EQ(Cli(RunArgs(unknown)).exit_code, 2);
  std::string wrong_type = WriteSpec("w.json", R"({"name": "s", "base": {"batch_size": "8"}})");
  EXPECT_EQ(Cli(RunArgs(wrong_type)).exit_code, 2);
  std::string not_divisible =
      WriteSpec("nd.json", R"({"name": "s", "axes": {"batch_size": [63], "nodes": [2]}})");
  CliResult nd = Cli(RunArgs(not_divisible));
  EXPECT_EQ(nd.exit_code, 2);
  EXPECT_NE(nd.err.find("axes.batch_size[0]: batch_size 63 is not divisible"), std::string::npos);
  EXPECT_EQ(Cli(RunArgs(dir_.path() + "/missing.json")).exit_code, 2);
  EXPECT_FALSE(fs::exists(Db()));
}

TEST_F(SweepCliTest, BadSpecLeavesAnExistingDatabaseByteForByteUntouched) {
  std::string good = WriteSpec("s.json", Spec("s", R"("FAKE_RUNNER_SECONDS": "0.01")"));
  ASSERT_EQ(Cli(RunArgs(good)).exit_code, 0);
  auto read = [&] {
    std::ifstream in(Db(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  // Checkpoint-free comparison: the main file, and its mtime.
  std::string before = read();
  struct stat st_before {};
  ASSERT_EQ(stat(Db().c_str(), &st_before), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::string bad = WriteSpec("bad.json", R"({"name": "s", "base": {"batch_size": 64,
                                               "optimizer": {"name": "sgdd"}}})");
  CliResult r = Cli(RunArgs(bad));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("base.optimizer.name: \"sgdd\" is not one of"), std::string::npos) << r.err;
  struct stat st_after {};
  ASSERT_EQ(stat(Db().c_str(), &st_after), 0);
  EXPECT_EQ(read(), before);
  EXPECT_EQ(st_after.st_mtim.tv_sec, st_before.st_mtim.tv_sec);
  EXPECT_EQ(st_after.st_mtim.tv_nsec, st_before.st_mtim.tv_nsec);
}

TEST_F(SweepCliTest, ChangedSpecIsRefusedUnlessNewVersion) {
  std::string v1 = WriteSpec("v1.json", Spec("s", R"("FAKE_RUNNER_SECONDS": "0.01")"));
  ASSERT_EQ(Cli(RunArgs(v1)).exit_code, 0);
  std::string v2 =
      WriteSpec("v2.json", R"({"name": "s", "base": {"mode": "noop"}, "axes": {"batch_size": [256]},
                     "launch": {"env": {"FAKE_RUNNER_SECONDS": "0.01"}}})");
  CliResult refused = Cli(RunArgs(v2));
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("different spec"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("--new-version"), std::string::npos);
  EXPECT_EQ(Query("SELECT count(*) FROM sweeps"), 1);
  CliResult accepted = Cli(RunArgs(v2, {"--new-version"}));
  ASSERT_EQ(accepted.exit_code, 0) << accepted.err;
  EXPECT_EQ(Query("SELECT max(version) FROM sweeps WHERE name = 's'"), 2);
  EXPECT_EQ(Query("SELECT count(*) FROM runs r JOIN sweeps s ON r.sweep_id = s.id "
                  "WHERE s.version = 2 AND r.state = 'completed'"),
            1);
}

TEST_F(SweepCliTest, MoreSeedsAndAxisValuesExtendTheSameVersion) {
  std::string v1 = WriteSpec("v1.json", Spec("s", R"("FAKE_RUNNER_SECONDS": "0.01")"));
  ASSERT_EQ(Cli(RunArgs(v1)).exit_code, 0);
  // Seeds 1, 2 and batch sizes 64, 128, 256: the 4 finished runs stay, 8 new ones join v1.
  std::string v2 = WriteSpec("v2.json", R"({"name": "s", "base": {"mode": "noop"},
      "axes": {"batch_size": [64, 128, 256], "nodes": [1, 2]}, "seeds": [1, 2],
      "launch": {"env": {"FAKE_RUNNER_SECONDS": "0.01"}}})");
  CliResult extended = Cli(RunArgs(v2));
  ASSERT_EQ(extended.exit_code, 0) << extended.err;
  EXPECT_NE(extended.err.find("extended: adds seeds [2]; adds axes.batch_size [256]"),
            std::string::npos)
      << extended.err;
  EXPECT_EQ(Query("SELECT count(*) FROM sweeps"), 1);
  EXPECT_EQ(Query("SELECT count(*) FROM runs r JOIN sweeps s ON r.sweep_id = s.id "
                  "WHERE s.version = 1 AND r.state = 'completed'"),
            12);
  // A changed base is a different study: refused, naming the field.
  std::string v3 = WriteSpec("v3.json", R"({"name": "s", "base": {"mode": "noop", "batch_size": 8},
      "axes": {"batch_size": [64, 128, 256], "nodes": [1, 2]}, "seeds": [1, 2],
      "launch": {"env": {"FAKE_RUNNER_SECONDS": "0.01"}}})");
  CliResult changed = Cli(RunArgs(v3));
  EXPECT_EQ(changed.exit_code, 2);
  EXPECT_NE(changed.err.find("base.batch_size"), std::string::npos) << changed.err;
  EXPECT_NE(changed.err.find("--new-version"), std::string::npos) << changed.err;
}

TEST_F(SweepCliTest, FailedRunsAreRetriedWithBackoffAndAttemptsKeepTheirOwnMetrics) {
  std::string spec = WriteSpec(
      "s.json", Spec("s", R"("FAKE_RUNNER_SECONDS": "0.01", "FAKE_RUNNER_FAIL_ATTEMPTS": "1")",
                     R"(, "resources": {"retries": 2, "retry_backoff_seconds": 0.05})"));
  CliResult r = Cli(RunArgs(spec));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE state = 'completed' AND attempt = 2"), 4);
  EXPECT_EQ(Query("SELECT count(*) FROM events WHERE kind = 'retry'"), 4);
  // Attempt 1 wrote steps but no end line; attempt 2 a complete file; stored separately.
  EXPECT_EQ(Query("SELECT count(*) FROM ingest_cursors WHERE attempt = 1 AND saw_end = 0 AND "
                  "lines = 6"),
            4);
  EXPECT_EQ(Query("SELECT count(*) FROM ingest_cursors WHERE attempt = 2 AND saw_end = 1 AND "
                  "lines = 7"),
            4);
  EXPECT_EQ(Query("SELECT count(*) FROM (SELECT DISTINCT run_key, attempt FROM metrics)"), 8);
  EXPECT_TRUE(fs::exists(Runs() + "/s"));
}

TEST_F(SweepCliTest, RunsThatKeepFailingExit1AndBadConfigIsNotRetried) {
  std::string spec = WriteSpec(
      "s.json", Spec("s", R"("FAKE_RUNNER_SECONDS": "0.01", "FAKE_RUNNER_FAIL_BATCH": "128")",
                     R"(, "resources": {"retries": 1, "retry_backoff_seconds": 0})"));
  CliResult r = Cli(RunArgs(spec));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("2 of 4 runs of sweep s failed"), std::string::npos) << r.err;
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE state = 'failed' AND attempt = 2 AND "
                  "batch_size = 128"),
            2);
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE state = 'completed'"), 2);
  // The failure message carries the runner's stderr.
  EXPECT_GE(Query("SELECT count(*) FROM events WHERE message LIKE '%fake failure of attempt%'"), 2);

  std::string bad_config =
      WriteSpec("b.json", R"({"name": "b", "base": {"mode": "noop", "batch_size": 64},
                    "launch": {"env": {"FAKE_RUNNER_EXIT": "2"}},
                    "resources": {"retries": 3, "retry_backoff_seconds": 0}})");
  EXPECT_EQ(Cli(RunArgs(bad_config)).exit_code, 1);
  EXPECT_EQ(Query("SELECT attempt FROM runs r JOIN sweeps s ON r.sweep_id = s.id "
                  "WHERE s.name = 'b'"),
            1);
}

TEST_F(SweepCliTest, TimeoutStopsTheRunAndMarksItTimedOut) {
  std::string spec =
      WriteSpec("t.json", R"({"name": "t", "base": {"mode": "noop", "batch_size": 64},
                    "launch": {"env": {"FAKE_RUNNER_SECONDS": "60"}},
                    "resources": {"timeout_seconds": 0.5, "retries": 1,
                                  "retry_backoff_seconds": 0}})");
  CliResult r = Cli(RunArgs(spec));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE state = 'timed_out' AND attempt = 2"), 1);
  EXPECT_EQ(Query("SELECT count(*) FROM events WHERE to_state = 'timed_out'"), 2);
}

TEST_F(SweepCliTest, PlanPrintsRunsAndStatusOfUnknownSweepExits2) {
  std::string spec = WriteSpec("s.json", Spec("s", R"("A": "b")"));
  CliResult plan = Cli({"sweep", "plan", spec, "--slots", "2"});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_NE(Stdout().find("4 runs"), std::string::npos) << Stdout();
  EXPECT_FALSE(fs::exists(Db()));  // plan runs nothing and opens no database
  CliResult plan_json = Cli({"sweep", "plan", spec, "--json"});
  ASSERT_EQ(plan_json.exit_code, 0);
  auto j = nlohmann::json::parse(Stdout());
  EXPECT_EQ(j["runs"].size(), 4u);
  EXPECT_EQ(j["runs"][3]["config"]["world_size"], 2);
  ASSERT_EQ(Cli(RunArgs(spec, {"--no-validate"})).exit_code, 0);
  EXPECT_EQ(Cli({"sweep", "status", "nope"}).exit_code, 2);
}

// Every example spec in sweeps/ runs, scaled down: two values per axis and zipped list, one
// seed, noop mode, fake_runner at the runner seam.
TEST_F(SweepCliTest, ExampleSpecsRunScaledDown) {
  int examples = 0;
  for (fs::directory_iterator it(SWEEPS_DIR), end; it != end; ++it) {
    std::string file = it->path().filename().string();
    if (it->path().extension() != ".json" || file == "spec.schema.json") continue;
    std::ifstream in(it->path().string());
    nlohmann::ordered_json spec = nlohmann::ordered_json::parse(in);
    // A branch study's trunk must train to leave checkpoints (noop refuses it, exit 2):
    // branch_e2e_test.cc runs one for real.
    if (spec.contains("branch")) continue;
    spec.erase("$schema");
    spec["base"]["mode"] = "noop";
    if (spec.contains("axes")) {
      for (auto& [path, values] : spec["axes"].items()) {
        if (values.size() > 2) values.erase(values.begin() + 2, values.end());
      }
    }
    if (spec.contains("zip")) {
      for (auto& group : spec["zip"]) {
        for (auto& [path, values] : group.items()) {
          if (values.size() > 2) values.erase(values.begin() + 2, values.end());
        }
      }
    }
    if (spec.contains("random")) spec["random"]["count"] = 2;
    spec.erase("repeats");
    spec.erase("seed");
    spec["seeds"] = {1};
    spec["launch"]["env"]["FAKE_RUNNER_SECONDS"] = "0.01";
    std::string path = WriteSpec("example-" + file, spec.dump(2));
    CliResult r = Cli(RunArgs(path, {"--no-validate"}));
    EXPECT_EQ(r.exit_code, 0) << file << ": " << r.err;
    ++examples;
  }
  EXPECT_GE(examples, 5);
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE state != 'completed'"), 0);
  EXPECT_GE(Query("SELECT count(*) FROM sweeps"), 5);
}

TEST_F(SweepCliTest, SigintStopsChildrenAndMarksTheirRunsCancelled) {
  std::string pid_dir = dir_.path() + "/pids";
  fs::create_directories(pid_dir);
  std::string spec = WriteSpec(
      "c.json", Spec("c", fmt::format(R"("FAKE_RUNNER_SECONDS": "60", "FAKE_RUNNER_PID_DIR": "{}")",
                                      pid_dir)));
  bp::child c(BATCHLAB_BIN, bp::args(Args(RunArgs(spec))), bp::std_out > bp::null,
              bp::std_err > (dir_.path() + "/err.txt"), bp::std_in < bp::null);
  // Two 1-rank runs fill both slots (the two 2-rank runs wait).
  ASSERT_TRUE(WaitFor([&] { return PidsIn(pid_dir).size() >= 2; }, 60));
  std::vector<pid_t> pids = PidsIn(pid_dir);
  // A second orchestrator of the same sweep is refused while the first one runs.
  CliResult second = Cli(RunArgs(spec));
  EXPECT_EQ(second.exit_code, 2);
  EXPECT_NE(second.err.find("another batchlab is writing the database"), std::string::npos)
      << second.err;
  kill(c.id(), SIGINT);
  c.wait();
  EXPECT_EQ(c.exit_code(), 130);  // 128 + SIGINT, the shell convention
  EXPECT_TRUE(WaitFor([&] { return AllGone(pids); }, 30)) << "runner processes survived";
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE state = 'cancelled'"), 2);
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE state = 'pending'"), 2);
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE state = 'running'"), 0);
}

// SIGHUP (the terminal went away) stops the sweep as cleanly as SIGINT: children stopped, their
// runs marked cancelled, none left running.
TEST_F(SweepCliTest, SighupStopsLikeSigint) {
  std::string pid_dir = dir_.path() + "/pids";
  fs::create_directories(pid_dir);
  std::string spec = WriteSpec(
      "h.json", Spec("h", fmt::format(R"("FAKE_RUNNER_SECONDS": "60", "FAKE_RUNNER_PID_DIR": "{}")",
                                      pid_dir)));
  bp::child c(BATCHLAB_BIN, bp::args(Args(RunArgs(spec))), bp::std_out > bp::null,
              bp::std_err > (dir_.path() + "/err.txt"), bp::std_in < bp::null);
  ASSERT_TRUE(WaitFor([&] { return PidsIn(pid_dir).size() >= 2; }, 60));
  std::vector<pid_t> pids = PidsIn(pid_dir);
  kill(c.id(), SIGHUP);
  c.wait();
  EXPECT_EQ(c.exit_code(), 129);  // 128 + SIGHUP (before the fix: killed, nothing marked)
  EXPECT_TRUE(WaitFor([&] { return AllGone(pids); }, 30)) << "runner processes survived";
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE state = 'cancelled'"), 2);
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE state = 'running'"), 0);
}

TEST_F(SweepCliTest, RunsDirThatIsAFileFailsBeforeTheDatabaseExists) {
  std::string spec = WriteSpec("s.json", Spec("s", R"("FAKE_RUNNER_SECONDS": "0.01")"));
  std::ofstream(Runs()) << "not a folder\n";
  CliResult r = Cli(RunArgs(spec));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--runs-dir " + Runs() + ": is not a folder"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(Db()));
}

TEST_F(SweepCliTest, ConstraintsDroppingEveryPointExit2AndRecordNothing) {
  std::string good = WriteSpec("s.json", Spec("s", R"("FAKE_RUNNER_SECONDS": "0.01")"));
  ASSERT_EQ(Cli(RunArgs(good)).exit_code, 0);
  std::string none = WriteSpec(
      "n.json", Spec("s", R"("FAKE_RUNNER_SECONDS": "0.01")",
                     R"(, "constraints": [{"field": "batch_size", "op": ">", "value": 100000}])"));
  CliResult r = Cli(RunArgs(none, {"--new-version"}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("constraints: every one of the 4 points is dropped"), std::string::npos)
      << r.err;
  EXPECT_EQ(Query("SELECT count(*) FROM sweeps"), 1);  // no empty version 2
  EXPECT_EQ(Cli({"sweep", "plan", none}).exit_code, 2);
}

TEST_F(SweepCliTest, ResumeAfterKill9LosesNoRunDuplicatesNoneAndKeepsAttemptsApart) {
  std::string pid_dir = dir_.path() + "/pids";
  fs::create_directories(pid_dir);
  // One slot: runs go one at a time; each takes ~6 s (5 steps), so the kill below lands with 3.6 s
  // or more of the run left. mpirun gets SIGTERM when the orchestrator dies but may exit without
  // stopping its ranks; the ranks get SIGTERM when mpirun dies (base/launched_process.h). Before
  // that, the orphaned ranks trained to their end in about 1 of 3 runs (CI failed on it).
  std::string spec = WriteSpec(
      "k.json",
      Spec("k",
           fmt::format(R"("FAKE_RUNNER_SECONDS": "6", "FAKE_RUNNER_PID_DIR": "{}")", pid_dir)));
  std::vector<std::string> args = RunArgs(spec);
  args.back() = "1";  // --slots 1
  bp::child c(BATCHLAB_BIN, bp::args(Args(args)), bp::std_out > bp::null,
              bp::std_err > (dir_.path() + "/err.txt"), bp::std_in < bp::null);
  // Kill the orchestrator once one run has completed and the next one is running.
  auto completed = [&] {
    if (!fs::exists(Db())) return int64_t{0};
    auto db = results::OpenReadOnly(Db());
    if (!db.ok()) return int64_t{0};
    auto v = (*db)->QueryInt("SELECT count(*) FROM runs WHERE state = 'completed'");
    return v.ok() ? *v : 0;
  };
  // ... and the running attempt is mid-way: its metrics have steps but no end line yet.
  auto mid_run = [&] {
    boost::system::error_code ec;
    for (fs::recursive_directory_iterator it(Runs() + "/k", ec), end; !ec && it != end;
         it.increment(ec)) {
      if (it->path().filename() != "metrics.jsonl") continue;
      std::ifstream in(it->path().string());
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      auto lines = std::count(text.begin(), text.end(), '\n');
      if (lines >= 2 && lines <= 3 && text.find("\"end\"") == std::string::npos) return true;
    }
    return false;
  };
  ASSERT_TRUE(WaitFor([&] { return completed() >= 1 && mid_run(); }, 60));
  std::vector<pid_t> orphans = PidsIn(pid_dir);
  kill(c.id(), SIGKILL);
  c.wait();
  // The runner of the interrupted attempt does not outlive its orchestrator.
  EXPECT_TRUE(WaitFor([&] { return AllGone(orphans); }, 30)) << "orphaned runner survived";
  // Bit mask of the runs completed before the kill (run_key is 1..4).
  const int64_t done_before =
      Query("SELECT coalesce(sum(1 << run_key), 0) FROM runs WHERE state = 'completed'");
  ASSERT_NE(done_before, 0);
  ASSERT_GE(Query("SELECT count(*) FROM runs WHERE state = 'running'"), 1);

  std::vector<std::string> resume = RunArgs(spec);
  resume.back() = "2";
  CliResult r = Cli(resume);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("was interrupted in attempt 1; it runs again"), std::string::npos) << r.err;
  EXPECT_EQ(Query("SELECT count(*) FROM runs"), 4);  // none lost, none duplicated
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE state = 'completed'"), 4);
  // Runs finished before the kill were not run again: they are still on attempt 1.
  const int64_t first_attempt_only = Query("SELECT sum(1 << run_key) FROM runs WHERE attempt = 1");
  EXPECT_EQ(first_attempt_only & done_before, done_before);
  // The interrupted run has two attempts: the first without an end line, the second complete;
  // each attempt's rows are stored under its own attempt number.
  EXPECT_GE(Query("SELECT count(*) FROM runs WHERE attempt = 2"), 1);
  EXPECT_EQ(Query("SELECT count(*) FROM ingest_cursors c JOIN runs r USING (run_key) "
                  "WHERE r.attempt = 2 AND c.attempt = 1 AND c.saw_end = 1"),
            0);
  EXPECT_EQ(Query("SELECT count(*) FROM ingest_cursors c JOIN runs r USING (run_key) "
                  "WHERE c.attempt = r.attempt AND c.saw_end = 1 AND c.lines = 7"),
            4);
  EXPECT_EQ(Query("SELECT count(*) FROM events WHERE message LIKE 'interrupted%'"),
            Query("SELECT count(*) FROM runs WHERE attempt = 2"));
}

// Every resolved config is validated before anything launches (issue 10): an invalid value in
// the second axis position used to be launched, fail and be retried.
TEST_F(SweepCliTest, AConfigTheRunnerRejectsInAnyAxisPositionExits2BeforeAnythingLaunches) {
  const std::string pids = dir_.path() + "/pids";
  fs::create_directories(pids);
  std::string spec = WriteSpec("s.json", Spec("s",
                                              fmt::format(R"("FAKE_RUNNER_INVALID_BATCH": "128",
                                        "FAKE_RUNNER_PID_DIR": "{}")",
                                                          pids),
                                              R"(, "resources": {"retries": 3})"));
  CliResult r = Cli(RunArgs(spec));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("axes.batch_size[1]: the run with batch_size=128, nodes=1, seed=1 is "
                       "rejected by batchlab-runner: batch_size: 128 is rejected"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("(and 1 more of the 4 distinct resolved configs)"), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(Db()));
  EXPECT_FALSE(fs::exists(Runs()));
  EXPECT_TRUE(fs::is_empty(pids));  // no rank ever started

  CliResult plan = Cli({"sweep", "plan", spec, "--runner", FAKE_RUNNER});
  EXPECT_EQ(plan.exit_code, 2) << plan.err;
  EXPECT_NE(plan.err.find("axes.batch_size[1]: the run with batch_size=128"), std::string::npos)
      << plan.err;
  EXPECT_EQ(Cli({"sweep", "plan", spec, "--runner", FAKE_RUNNER, "--no-validate"}).exit_code, 0);
}

}  // namespace
}  // namespace batchlab::orchestrator
