// The live views as a user runs them, with real mpirun, SQLite and fake_runner at the runner
// seam: `sweep status` while a sweep runs (each running run's step of its budget, loss, ETA),
// `sweep status --watch` redrawing until the sweep ends, and `batchlab ui` answering HTTP
// requests (JSON progress, the live page, 404 naming the sweeps) on 127.0.0.1 without changing
// the database, and stopping on SIGINT.
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <boost/process.hpp>
#include <nlohmann/json.hpp>

#include "tests/support/file_text.h"
#include "tests/support/temp_dir.h"

namespace batchlab {
namespace {

using ::batchlab::testing::ReadFileText;

namespace bp = boost::process;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

class LiveViewTest : public ::testing::Test {
 protected:
  std::string Db() const { return dir_.File("batchlab.db"); }

  struct Result {
    int exit_code = -1;
    std::string out, err;
  };

  Result Cli(std::vector<std::string> args) {
    std::vector<std::string> a = {"--db", Db()};
    a.insert(a.end(), args.begin(), args.end());
    const std::string out = dir_.File("out.txt"), err = dir_.File("err.txt");
    std::remove(out.c_str());  // boost.process opens without truncating
    std::remove(err.c_str());
    bp::child c(BATCHLAB_BIN, bp::args(a), bp::std_out > out, bp::std_err > err,
                bp::std_in < bp::null);
    c.wait();
    return {c.exit_code(), ReadFileText(out), ReadFileText(err)};
  }

  // A sweep of two 1-rank fake runs of 4 s each (5 steps), run side by side in the background.
  bp::child StartSweep() {
    const std::string spec = dir_.File("s.json");
    std::ofstream(spec) << R"({"name": "s", "base": {"mode": "noop", "budget": {"steps": 5}},
        "axes": {"batch_size": [64, 128]},
        "launch": {"env": {"FAKE_RUNNER_SECONDS": "4"}}})";
    return bp::child(BATCHLAB_BIN,
                     bp::args({"--db", Db(), "sweep", "run", spec, "--runs-dir", dir_.File("runs"),
                               "--runner", FAKE_RUNNER, "--slots", "2"}),
                     bp::std_out > dir_.File("run.out"), bp::std_err > dir_.File("run.err"),
                     bp::std_in < bp::null);
  }

  testing::TempDir dir_;
};

TEST_F(LiveViewTest, StatusShowsEachRunningRunAndWatchFollowsTheSweepToItsEnd) {
  bp::child sweep = StartSweep();
  // Poll `sweep status` until both runs show a step of their 5-step budget with a loss and ETA.
  const std::regex running_row(R"(running +([1-4])/5 +[0-9.]+ +\S* *(\d+:\d\d) +(\d+:\d\d))");
  std::string seen;
  int rows = 0;
  for (auto until = Clock::now() + std::chrono::seconds(30); Clock::now() < until && rows < 2;) {
    Result r = Cli({"sweep", "status", "s"});
    if (r.exit_code == 0) {
      seen = r.out;
      rows = static_cast<int>(std::distance(
          std::sregex_iterator(seen.begin(), seen.end(), running_row), std::sregex_iterator()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(rows, 2) << seen;
  // The header and rule of the CLI's one table writer (16-character run ids, two spaces apart).
  EXPECT_NE(seen.find("\nrun               state"), std::string::npos) << seen;
  EXPECT_NE(seen.find("\n----------------  ----"), std::string::npos) << seen;
  EXPECT_NE(seen.find("2 running"), std::string::npos) << seen;
  EXPECT_EQ(seen.find("-0"), std::string::npos) << seen;

  // --watch redraws until no run is left to run, then exits 0.
  Result watch = Cli({"sweep", "status", "s", "--watch", "0.3"});
  EXPECT_EQ(watch.exit_code, 0) << watch.err;
  size_t frames = 0;
  for (size_t at = 0; (at = watch.out.find("sweep s version 1", at)) != std::string::npos; ++at) {
    ++frames;
  }
  EXPECT_GE(frames, 2u) << watch.out;
  EXPECT_NE(watch.out.rfind("2 runs: 2 completed | ETA 0:00"), std::string::npos) << watch.out;
  sweep.wait();
  EXPECT_EQ(sweep.exit_code(), 0) << ReadFileText(dir_.File("run.err"));

  Result as_json = Cli({"sweep", "status", "s", "--format", "json"});
  ASSERT_EQ(as_json.exit_code, 0) << as_json.err;
  const json j = json::parse(as_json.out);
  EXPECT_EQ(j["counts"]["completed"], 2);
  EXPECT_EQ(j["runs"].size(), 2u);
  EXPECT_EQ(j["runs"][1]["step"], 5);
}

TEST_F(LiveViewTest, UiServesProgressJsonAndTheLivePageReadOnly) {
  bp::child sweep = StartSweep();
  sweep.wait();
  ASSERT_EQ(sweep.exit_code(), 0) << ReadFileText(dir_.File("run.err"));
  struct stat before {};
  ASSERT_EQ(stat(Db().c_str(), &before), 0);

  const std::string log = dir_.File("ui.log");
  bp::child ui(BATCHLAB_BIN, bp::args({"--db", Db(), "ui", "--port", "0"}), bp::std_out > log,
               bp::std_err > dir_.File("ui.err"), bp::std_in < bp::null);
  int port = 0;
  const std::regex address(R"(http://127\.0\.0\.1:(\d+)/)");  // 127.0.0.1 unless --host says so
  for (auto until = Clock::now() + std::chrono::seconds(20); Clock::now() < until && port == 0;) {
    std::smatch m;
    const std::string text = ReadFileText(log);
    if (std::regex_search(text, m, address)) port = std::stoi(m[1]);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_NE(port, 0) << ReadFileText(log) << ReadFileText(dir_.File("ui.err"));

  httplib::Client http("127.0.0.1", port);
  http.set_read_timeout(60, 0);
  auto progress = http.Get("/api/sweeps/s/progress");
  ASSERT_TRUE(progress) << "no answer";
  EXPECT_EQ(progress->status, 200);
  const json p = json::parse(progress->body);
  EXPECT_EQ(p["total"], 2);
  EXPECT_EQ(p["counts"]["completed"], 2);
  EXPECT_EQ(p["runs"][0]["step"], 5);
  EXPECT_EQ(p["runs"][0]["total_steps"], 5);
  EXPECT_TRUE(p["runs"][0]["loss"].is_number());
  EXPECT_FALSE(p["fingerprint"].get<std::string>().empty());

  auto page = http.Get("/sweeps/s");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("id=\"live\" data-progress-url=\"/api/sweeps/s/progress\""),
            std::string::npos);
  EXPECT_NE(page->body.find("batchlab report: sweep s"), std::string::npos);

  auto index = http.Get("/");
  ASSERT_TRUE(index);
  EXPECT_NE(index->body.find("href=\"/sweeps/s\""), std::string::npos) << index->body;
  auto missing = http.Get("/sweeps/nope");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_NE(missing->body.find("sweeps there: s (v1)"), std::string::npos) << missing->body;

  // Read-only: the file is exactly as it was.
  struct stat after {};
  ASSERT_EQ(stat(Db().c_str(), &after), 0);
  EXPECT_EQ(after.st_size, before.st_size);
  EXPECT_EQ(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
  EXPECT_EQ(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);

  ::kill(ui.id(), SIGINT);
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (ui.running() && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_FALSE(ui.running()) << "batchlab ui did not stop on SIGINT";
  if (ui.running()) ui.terminate();
  ui.wait();
  EXPECT_EQ(ui.exit_code(), 130);  // 128 + SIGINT
  // Ctrl-C is how a server is stopped: no error message ("stopped by signal 2").
  EXPECT_EQ(ReadFileText(dir_.File("ui.err")).find("error"), std::string::npos)
      << ReadFileText(dir_.File("ui.err"));
}

// The port of the first `batchlab ui` started with --port 0, or 0 if it printed none in 20 s.
int PortOf(const std::string& log) {
  const std::regex address(R"(http://127\.0\.0\.1:(\d+)/)");
  for (auto until = Clock::now() + std::chrono::seconds(20); Clock::now() < until;) {
    std::smatch m;
    const std::string text = ReadFileText(log);
    if (std::regex_search(text, m, address)) return std::stoi(m[1]);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return 0;
}

// Waits up to `seconds` for `c` to exit; false (and kills it) if it is still running.
bool ExitsWithin(bp::child& c, double seconds) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  while (c.running() && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (c.running()) {
    c.terminate();
    return false;
  }
  c.wait();
  return true;
}

TEST_F(LiveViewTest, ShortRunsShowTheirStepLossAndEvalInTheWatch) {
  // Runs of about half a second, one after another: a run used to be in the view only while it
  // was running, and it ended before its metrics reached the database (ingested once a second)
  // or the next redraw, so its step, loss and evaluation were never shown. A run that just
  // ended stays in the view with its final numbers.
  const std::string spec = dir_.File("short.json");
  std::ofstream(spec) << R"({"name": "s", "base": {"mode": "noop", "budget": {"steps": 5}},
      "axes": {"batch_size": [16, 32, 64]},
      "launch": {"env": {"FAKE_RUNNER_SECONDS": "0.4", "FAKE_RUNNER_ACCURACY": "0.5"}}})";
  const std::string out = dir_.File("watch.out");
  bp::child watch(BATCHLAB_BIN, bp::args({"--db", Db(), "sweep", "status", "s", "--watch", "0.3"}),
                  bp::std_out > out, bp::std_err > dir_.File("watch.err"), bp::std_in < bp::null);
  Result run = Cli({"sweep", "run", spec, "--runs-dir", dir_.File("runs"), "--runner", FAKE_RUNNER,
                    "--slots", "1"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_TRUE(ExitsWithin(watch, 30)) << ReadFileText(out);
  const std::string text = ReadFileText(out);
  // Each run, in some frame, at its last step of 5 with its loss and its last evaluation.
  const std::regex row(R"(\n([0-9a-f]{16}) +\w+ +5/5 +0\.20* +test_accuracy=0\.5 test_loss=2\.3 @5 )");
  std::set<std::string> shown;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), row); it != std::sregex_iterator();
       ++it) {
    shown.insert((*it)[1]);
  }
  EXPECT_EQ(shown.size(), 3u) << text;
}

TEST_F(LiveViewTest, UiOnAPortInUseExits2NamingThePort) {
  bp::child sweep = StartSweep();
  sweep.wait();
  ASSERT_EQ(sweep.exit_code(), 0) << ReadFileText(dir_.File("run.err"));
  bp::child first(BATCHLAB_BIN, bp::args({"--db", Db(), "ui", "--port", "0"}),
                  bp::std_out > dir_.File("ui1.log"), bp::std_err > dir_.File("ui1.err"),
                  bp::std_in < bp::null);
  const int port = PortOf(dir_.File("ui1.log"));
  ASSERT_NE(port, 0) << ReadFileText(dir_.File("ui1.err"));
  // A second server on the same port used to start too (SO_REUSEPORT) and take half the
  // requests, for another database.
  bp::child second(BATCHLAB_BIN, bp::args({"--db", Db(), "ui", "--port", std::to_string(port)}),
                   bp::std_out > dir_.File("ui2.log"), bp::std_err > dir_.File("ui2.err"),
                   bp::std_in < bp::null);
  const bool exited = ExitsWithin(second, 15);
  EXPECT_TRUE(exited) << "a second `batchlab ui` listens on port " << port;
  if (exited) {
    EXPECT_EQ(second.exit_code(), 2);
    const std::string err = ReadFileText(dir_.File("ui2.err"));
    EXPECT_NE(err.find(fmt::format("--port {}", port)), std::string::npos) << err;
    EXPECT_NE(err.find("in use"), std::string::npos) << err;
  }
  ::kill(first.id(), SIGINT);
  EXPECT_TRUE(ExitsWithin(first, 10));
}

TEST_F(LiveViewTest, WatchWaitsForTheSweepToStartAndCtrlCEndsItQuietly) {
  // Started before the sweep (and its database) exist: it used to exit 2 at once.
  const std::string out = dir_.File("watch.out"), err = dir_.File("watch.err");
  bp::child watch(BATCHLAB_BIN, bp::args({"--db", Db(), "sweep", "status", "s", "--watch", "0.3"}),
                  bp::std_out > out, bp::std_err > err, bp::std_in < bp::null);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ASSERT_TRUE(watch.running()) << ReadFileText(err);
  EXPECT_NE(ReadFileText(err).find("waiting for sweep s to start"), std::string::npos) << ReadFileText(err);
  bp::child sweep = StartSweep();
  ASSERT_TRUE(ExitsWithin(watch, 60)) << ReadFileText(out);
  EXPECT_EQ(watch.exit_code(), 0) << ReadFileText(err);
  EXPECT_NE(ReadFileText(out).rfind("2 runs: 2 completed | ETA 0:00"), std::string::npos) << ReadFileText(out);
  sweep.wait();

  // Ctrl-C while watching: 130, and no error message.
  bp::child waiting(BATCHLAB_BIN,
                    bp::args({"--db", Db(), "sweep", "status", "nope", "--watch", "0.2"}),
                    bp::std_out > out, bp::std_err > err, bp::std_in < bp::null);
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  ::kill(waiting.id(), SIGINT);
  ASSERT_TRUE(ExitsWithin(waiting, 10));
  EXPECT_EQ(waiting.exit_code(), 130);
  EXPECT_EQ(ReadFileText(err).find("error"), std::string::npos) << ReadFileText(err);
}

TEST_F(LiveViewTest, AStartRefusedByTheDatabaseCreatesNoRunsFolder) {
  // Not a batchlab database: refused (exit 2), and the --runs-dir it named is not created.
  std::ofstream(Db()) << "not sqlite at all, just text that is long enough to be read as a header";
  const std::string spec = dir_.File("s.json");
  std::ofstream(spec) << R"({"name": "s", "base": {"mode": "noop", "batch_size": 64, "budget": {"steps": 5}}})";
  const std::string runs = dir_.File("new/runs");
  Result r = Cli({"sweep", "run", spec, "--runs-dir", runs, "--runner", FAKE_RUNNER});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("batchlab: error: "), std::string::npos) << r.err;
  struct stat st {};
  EXPECT_NE(stat(dir_.File("new").c_str(), &st), 0) << "an empty runs folder was left behind";
}

TEST_F(LiveViewTest, UiOnAFileThatIsNotADatabaseExits2NamingTheFix) {
  std::ofstream(Db()) << "not sqlite at all, just text that is long enough to be read as a header";
  Result r = Cli({"ui", "--port", "0"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--db"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace batchlab
