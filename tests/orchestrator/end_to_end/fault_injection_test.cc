// Fault injection (label `fault`), scaled to a 2-core machine: real `batchlab sweep run`
// processes, real mpirun and SQLite, fake_runner at the runner seam doing what real programs do
// when things go wrong. Repeated kill -9 of the orchestrator with resume; a rank killed; a rank
// hung; a full disk for the runs folder and for the database (a small tmpfs: needs root, as the
// tests run in CI); a runner writing garbage, truncated lines, seq anomalies, NaN/Infinity, a
// huge line and hanging after its end line; two orchestrators on one database; a runs folder
// reused by a second database. Every runner also leaves a process that escapes its job's session
// (FAKE_RUNNER_DETACH), the hardest kind of orphan to find.
//
// Each test writes a one-line summary to <build>/fault-injection/<test>.txt, which
// scripts/test.sh prints after the suite.
#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <boost/process.hpp>

#include "results/database.h"
#include "results/schema.h"
#include "tests/orchestrator/end_to_end/process_checks.h"
#include "tests/support/temp_dir.h"
#include "tests/support/file_text.h"

namespace batchlab::orchestrator {
namespace {

using ::batchlab::testing::ReadFileText;

namespace bp = boost::process;
namespace fs = std::filesystem;
using testing::Alive;
using testing::PidsIn;
using testing::TempDir;
using testing::WaitFor;

struct CliResult {
  int exit_code = -1;
  std::string err;
};

// A tmpfs of `size` at `path` (root only), unmounted at the end.
class SmallDisk {
 public:
  SmallDisk(const std::string& path, const std::string& size) : path_(path) {
    fs::create_directories(path);
    mounted_ = mount("tmpfs", path.c_str(), "tmpfs", 0, ("size=" + size).c_str()) == 0;
    error_ = mounted_ ? "" : std::strerror(errno);
  }
  ~SmallDisk() {
    if (mounted_) umount2(path_.c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }
  const std::string& error() const { return error_; }
  // Frees the disk up (as an operator would): more room, nothing deleted.
  bool Grow(const std::string& size) {
    return mount("tmpfs", path_.c_str(), "tmpfs", MS_REMOUNT, ("size=" + size).c_str()) == 0;
  }

 private:
  std::string path_, error_;
  bool mounted_ = false;
};

class FaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pids_ = dir_.File("pids");
    fs::create_directories(pids_);
  }

  void TearDown() override {
    // Whatever a failed test left behind must not disturb the next one.
    for (pid_t p : PidsIn(pids_)) kill(p, SIGKILL);
  }

  std::string Db() const { return db_.empty() ? dir_.File("batchlab.db") : db_; }
  std::string Runs() const { return runs_.empty() ? dir_.File("runs") : runs_; }

  // A spec of `batches` batch sizes (64, 128, ...) x `nodes` (1-rank and 2-rank jobs), every
  // runner leaving a detached process behind, plus `env` and `extra` top-level fields.
  std::string WriteSpec(const std::string& name, int batches, const std::string& nodes,
                        const std::string& env, const std::string& extra = "") {
    std::string sizes;
    for (int i = 0; i < batches; ++i) sizes += fmt::format("{}{}", i ? ", " : "", 64 << i);
    const std::string path = dir_.File(name + ".json");
    std::ofstream(path) << fmt::format(
        R"({{"name": "{}", "base": {{"mode": "noop"}},
            "axes": {{"batch_size": [{}], "nodes": {}}},
            "launch": {{"env": {{"FAKE_RUNNER_PID_DIR": "{}", "FAKE_RUNNER_DETACH": "1"{}}}}}{}}})",
        name, sizes, nodes, pids_, env.empty() ? "" : ", " + env, extra);
    return path;
  }

  std::vector<std::string> RunArgs(const std::string& spec, const std::string& slots = "2") {
    return {"--db",     Db(),        "sweep",   "run", spec, "--runs-dir", Runs(),
            "--runner", FAKE_RUNNER, "--slots", slots};
  }

  CliResult Cli(const std::vector<std::string>& args) {
    const std::string err = dir_.File("stderr.txt");
    std::remove(err.c_str());  // boost.process opens without truncating: no stale tail
    bp::child c(BATCHLAB_BIN, bp::args(args), bp::std_out > bp::null, bp::std_err > err,
                bp::std_in < bp::null);
    c.wait();
    return {c.exit_code(), ReadFileText(err)};
  }

  int64_t Query(const std::string& sql) {
    auto db = results::OpenReadOnly(Db());
    if (!db.ok()) return -1;
    auto v = (*db)->QueryInt(sql);
    EXPECT_TRUE(v.ok()) << sql << ": " << v.status().message();
    return v.ok() ? *v : -1;
  }

  // Processes of this test's jobs still running: fake_runner pids (ranks, and the processes
  // they detached) and anything tagged with an attempt folder under the runs folder.
  int Orphans() {
    std::vector<pid_t> live;
    for (pid_t p : PidsIn(pids_)) {
      if (Alive(p) && ReadFileText(fmt::format("/proc/{}/cmdline", p)).find("fake_runner") !=
                          std::string::npos) {
        live.push_back(p);
      }
    }
    const std::string tag = "BATCHLAB_ATTEMPT_DIR=" + Runs();
    std::error_code ec;
    for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      const pid_t pid = std::stoi(name);
      if (pid == getpid() || !Alive(pid)) continue;
      if (ReadFileText(it->path().string() + "/environ").find(tag) != std::string::npos &&
          std::find(live.begin(), live.end(), pid) == live.end()) {
        live.push_back(pid);
      }
    }
    return static_cast<int>(live.size());
  }

  bool NoOrphansSoon() {
    return WaitFor([&] { return Orphans() == 0; }, 20);
  }

  void Summary(const std::string& line) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    fs::create_directories(FAULT_FIGURES_DIR);
    std::ofstream(fmt::format("{}/{}.txt", FAULT_FIGURES_DIR, info->name())) << line << "\n";
    fmt::print("{}: {}\n", info->name(), line);
  }

  TempDir dir_;
  std::string pids_, db_, runs_;
};

constexpr const char* kFinished =
    "state IN ('completed', 'target_reached', 'diverged', 'budget_exhausted')";

TEST_F(FaultTest, RepeatedKill9WithResumeLosesNothing) {
  const int kRuns = 8, kKills = 5;
  const std::string spec = WriteSpec("k", kRuns / 2, "[1, 2]", R"("FAKE_RUNNER_SECONDS": "1")");
  for (int k = 0; k < kKills; ++k) {
    const std::string err = dir_.File(fmt::format("kill-{}.txt", k));
    bp::child c(BATCHLAB_BIN, bp::args(RunArgs(spec)), bp::std_out > bp::null, bp::std_err > err,
                bp::std_in < bp::null);
    // Once a run of this round is going, at a different moment every round.
    const int64_t attempts_before = std::max<int64_t>(0, Query("SELECT count(*) FROM attempts"));
    WaitFor([&] { return Query("SELECT count(*) FROM attempts") > attempts_before; }, 30);
    std::this_thread::sleep_for(std::chrono::milliseconds(150 + 250 * k));
    kill(c.id(), SIGKILL);
    c.wait();
  }
  CliResult last = Cli(RunArgs(spec));
  ASSERT_EQ(last.exit_code, 0) << last.err;
  const int64_t finished = Query(fmt::format("SELECT count(*) FROM runs WHERE {}", kFinished));
  const int64_t lost = kRuns - finished;
  // A run whose end line was stored in more than one attempt ran to its end twice.
  const int64_t duplicated =
      Query("SELECT count(*) FROM (SELECT run_key FROM ingest_cursors WHERE saw_end = 1 "
            "GROUP BY run_key HAVING count(*) > 1)") +
      (Query("SELECT count(*) FROM runs") - kRuns);
  EXPECT_TRUE(NoOrphansSoon());
  const int orphans = Orphans();
  Summary(fmt::format("killed {}×: runs {}/{} finished, {} lost, {} duplicated, {} orphans", kKills,
                      finished, kRuns, lost, duplicated, orphans));
  EXPECT_EQ(finished, kRuns);
  EXPECT_EQ(lost, 0);
  EXPECT_EQ(duplicated, 0);
  EXPECT_EQ(orphans, 0);
  // Every attempt is in its own recorded folder, and every folder still exists.
  EXPECT_EQ(Query("SELECT count(DISTINCT dir) FROM attempts"), Query("SELECT count(*) FROM attempts"));
  EXPECT_EQ(Query("SELECT count(*) FROM attempts"), Query("SELECT sum(attempt) FROM runs"));
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE state = 'running'"), 0);
}

TEST_F(FaultTest, RankKillLeavesNoRankBehind) {
  const std::string spec = WriteSpec(
      "r", 1, "[2]", R"("FAKE_RUNNER_SECONDS": "60", "FAKE_RUNNER_SLOW_ATTEMPTS": "1")",
      R"(, "resources": {"retries": 1, "retry_backoff_seconds": 0})");
  bp::child c(BATCHLAB_BIN, bp::args(RunArgs(spec)), bp::std_out > bp::null,
              bp::std_err > dir_.File("err.txt"), bp::std_in < bp::null);
  // Both ranks of attempt 1 and the processes they detached.
  ASSERT_TRUE(WaitFor([&] { return PidsIn(pids_, "-1-").size() >= 4; }, 60));
  std::vector<pid_t> attempt1 = PidsIn(pids_, "-1-");
  std::vector<pid_t> rank1 = PidsIn(pids_, "-1-1.pid");
  ASSERT_EQ(rank1.size(), 1u);
  kill(rank1[0], SIGKILL);
  c.wait();
  EXPECT_EQ(c.exit_code(), 0) << ReadFileText(dir_.File("err.txt"));
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE world_size = 2 AND state = 'completed' AND "
                  "attempt = 2"),
            1);
  EXPECT_TRUE(WaitFor([&] { return testing::AllGone(attempt1); }, 20)) << "a rank survived";
  EXPECT_TRUE(NoOrphansSoon());
  Summary(fmt::format("rank 1 of a 2-rank run killed: retried and completed, {} orphans",
                      Orphans()));
}

TEST_F(FaultTest, RankHangIsTimedOutAndEveryRankStopped) {
  const std::string spec =
      WriteSpec("h", 1, "[1, 2]", R"("FAKE_RUNNER_HANG_RANK": "1", "FAKE_RUNNER_SECONDS": "0.1")",
                R"(, "resources": {"retries": 0, "timeout_seconds": 2})");
  CliResult r = Cli(RunArgs(spec));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE state = 'timed_out'"), 2);
  EXPECT_TRUE(NoOrphansSoon());
  Summary(fmt::format("ranks hung (rank 1 ignoring SIGTERM): 2/2 runs timed out, {} orphans",
                      Orphans()));
}

TEST_F(FaultTest, RunsFolderDiskFullFailsRunsCleanly) {
  runs_ = dir_.File("small-runs");
  SmallDisk disk(runs_, "384k");
  if (!disk.mounted()) GTEST_SKIP() << "cannot mount a tmpfs (needs root): " << disk.error();
  const int kRuns = 8;
  const std::string spec = WriteSpec(
      "d", kRuns / 2, "[1, 2]",
      R"("FAKE_RUNNER_SECONDS": "0.3", "FAKE_RUNNER_STEPS": "40", "FAKE_RUNNER_PAD": "3000")",
      R"(, "resources": {"retries": 1, "retry_backoff_seconds": 0})");
  CliResult full = Cli(RunArgs(spec));
  EXPECT_NE(full.exit_code, 0);
  EXPECT_EQ(full.err.find(".cc:"), std::string::npos) << full.err;
  EXPECT_TRUE(NoOrphansSoon());
  EXPECT_LT(Query(fmt::format("SELECT count(*) FROM runs WHERE {}", kFinished)), kRuns);
  ASSERT_TRUE(disk.Grow("64m"));
  CliResult resumed = Cli(RunArgs(spec));
  EXPECT_EQ(resumed.exit_code, 0) << resumed.err;
  const int64_t finished = Query(fmt::format("SELECT count(*) FROM runs WHERE {}", kFinished));
  EXPECT_EQ(finished, kRuns);
  EXPECT_TRUE(NoOrphansSoon());
  Summary(fmt::format("runs folder full: stopped (exit {}), after freeing space {}/{} finished, "
                      "{} orphans",
                      full.exit_code, finished, kRuns, Orphans()));
}

TEST_F(FaultTest, DatabaseDiskFullStopsCleanlyAndResumes) {
  const std::string small = dir_.File("small-db");
  SmallDisk disk(small, "512k");
  if (!disk.mounted()) GTEST_SKIP() << "cannot mount a tmpfs (needs root): " << disk.error();
  db_ = small + "/batchlab.db";
  const int kRuns = 8;
  const std::string spec =
      WriteSpec("b", kRuns / 2, "[1, 2]", R"("FAKE_RUNNER_SECONDS": "3", "FAKE_RUNNER_STEPS": "1500")");
  CliResult full = Cli(RunArgs(spec));
  EXPECT_EQ(full.exit_code, 1) << full.err;
  EXPECT_NE(full.err.find("full"), std::string::npos) << full.err;
  EXPECT_EQ(full.err.find(".cc:"), std::string::npos) << full.err;  // no source paths
  // The runs it was running when the database filled up are stopped, every process of them.
  EXPECT_TRUE(NoOrphansSoon());
  {
    auto db = results::Database::Open(db_, results::Database::Mode::kReadOnly);
    ASSERT_TRUE(db.ok());
    auto check = (*db)->Prepare("PRAGMA integrity_check");
    ASSERT_TRUE(check.ok());
    ASSERT_TRUE(*check->Step());
    EXPECT_EQ(check->ColumnText(0), "ok");
  }
  ASSERT_TRUE(disk.Grow("64m"));
  CliResult resumed = Cli(RunArgs(spec));
  EXPECT_EQ(resumed.exit_code, 0) << resumed.err;
  const int64_t finished = Query(fmt::format("SELECT count(*) FROM runs WHERE {}", kFinished));
  EXPECT_EQ(finished, kRuns);
  EXPECT_TRUE(NoOrphansSoon());
  Summary(fmt::format("database disk full: stopped (exit {}), database intact, after freeing "
                      "space {}/{} finished, {} orphans",
                      full.exit_code, finished, kRuns, Orphans()));
}

TEST_F(FaultTest, MisbehavingRunnerLosesNothingAndHidesNothing) {
  const std::string spec = WriteSpec(
      "m", 1, "[2]", R"("FAKE_RUNNER_MISBEHAVE": "garbage,truncated,seq,nan,huge,end-hang")",
      R"(, "resources": {"retries": 1, "retry_backoff_seconds": 0})");
  CliResult r = Cli(RunArgs(spec));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // It ran once and kept its end line's outcome, though it hung after it.
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE state = 'completed' AND attempt = 1 AND "
                  "outcome = 'completed' AND steps = 5"),
            1);
  EXPECT_EQ(Query("SELECT count(*) FROM events WHERE kind = 'retry'"), 0);
  std::map<std::string, int64_t> kinds;
  for (const char* kind : {"corrupt_metrics_line", "seq_not_increasing", "non_finite_value",
                           "line_too_long"}) {
    kinds[kind] = Query(fmt::format("SELECT count(*) FROM events WHERE kind = '{}'", kind));
    EXPECT_GE(kinds[kind], 1) << kind;
  }
  EXPECT_EQ(kinds["corrupt_metrics_line"], 2);  // the garbage and the cut-off line
  EXPECT_EQ(kinds["line_too_long"], 1);
  EXPECT_EQ(Query("SELECT count(*) FROM run_metrics WHERE name = 'loss'"), 6);  // 5 + the NaN
  // A reader that insists on UTF-8 (Python's sqlite3) reads every text value.
  bp::child py("/usr/bin/python3",
               bp::args({"-c",
                         "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); "
                         "n=sum(1 for t in ['events','runs','attempts'] "
                         "for r in c.execute('select * from '+t)); print(n)",
                         Db()}),
               bp::std_out > dir_.File("py.txt"), bp::std_err > dir_.File("py-err.txt"));
  py.wait();
  EXPECT_EQ(py.exit_code(), 0) << ReadFileText(dir_.File("py-err.txt"));
  EXPECT_TRUE(NoOrphansSoon());
  Summary(fmt::format("misbehaving runner: kept its end line's outcome; events: {} "
                      "corrupt, {} seq, {} non-finite, {} too long; {} orphans",
                      kinds["corrupt_metrics_line"], kinds["seq_not_increasing"],
                      kinds["non_finite_value"], kinds["line_too_long"], Orphans()));
}

TEST_F(FaultTest, TwoOrchestratorsOnOneDatabase) {
  const std::string spec = WriteSpec("t", 1, "[1, 2]", R"("FAKE_RUNNER_SECONDS": "3")");
  bp::child first(BATCHLAB_BIN, bp::args(RunArgs(spec)), bp::std_out > bp::null,
                  bp::std_err > dir_.File("first.txt"), bp::std_in < bp::null);
  ASSERT_TRUE(WaitFor([&] { return Query("SELECT count(*) FROM attempts") >= 1; }, 30));
  runs_ = dir_.File("other-runs");  // another runs folder, the same database
  CliResult second = Cli(RunArgs(spec));
  runs_.clear();
  EXPECT_EQ(second.exit_code, 2) << second.err;
  EXPECT_NE(second.err.find("another batchlab is writing the database"), std::string::npos)
      << second.err;
  first.wait();
  EXPECT_EQ(first.exit_code(), 0) << ReadFileText(dir_.File("first.txt"));
  EXPECT_EQ(Query("SELECT max(attempt) FROM runs"), 1);  // nothing ran twice
  EXPECT_EQ(Query("SELECT count(*) FROM events WHERE from_state = 'running' AND "
                  "to_state = 'running'"),
            0);
  EXPECT_FALSE(fs::exists(dir_.File("other-runs/t")));
  Summary(fmt::format("two orchestrators, one database: the second refused (exit {}), every "
                      "run ran once",
                      second.exit_code));
}

TEST_F(FaultTest, ReusedRunsFolderNeverTouchesAnotherDatabasesFolders) {
  const int kRuns = 4;
  const std::string spec = WriteSpec("u", kRuns / 2, "[1, 2]", R"("FAKE_RUNNER_SECONDS": "0.05")");
  ASSERT_EQ(Cli(RunArgs(spec)).exit_code, 0);
  auto snapshot = [&] {
    std::map<std::string, std::string> files;
    for (const auto& e : fs::recursive_directory_iterator(Runs())) {
      if (e.is_regular_file()) files[e.path().string()] = ReadFileText(e.path().string());
    }
    return files;
  };
  const auto first = snapshot();
  ASSERT_GE(first.size(), static_cast<size_t>(kRuns * 3));
  db_ = dir_.File("second.db");
  CliResult second = Cli(RunArgs(spec));
  ASSERT_EQ(second.exit_code, 0) << second.err;
  const auto after = snapshot();
  int unchanged = 0;
  for (const auto& [path, text] : first) {
    auto it = after.find(path);
    unchanged += it != after.end() && it->second == text ? 1 : 0;
  }
  EXPECT_EQ(unchanged, static_cast<int>(first.size()));  // every file of the first database
  EXPECT_GT(after.size(), first.size());                 // the second one's are beside them
  EXPECT_EQ(Query(fmt::format("SELECT count(*) FROM runs WHERE {}", kFinished)), kRuns);
  Summary(fmt::format("runs folder reused by a second database: {}/{} files of the first "
                      "untouched",
                      unchanged, first.size()));
}

}  // namespace
}  // namespace batchlab::orchestrator
