// The hostile-spec corpus (tests/orchestrator/end_to_end/hostile_specs/, listed with the text each error
// must contain in expected.tsv): generic JSON attacks and attacks on the spec language. Every
// spec goes through `batchlab sweep run` and `batchlab sweep plan --validate` against a database
// that already holds a finished sweep, and must exit 2 with a message naming the JSON path, launch
// nothing (no attempt folder, no rank started) and leave the database byte for byte untouched.
// Specs marked `runner` are refused by the real batchlab-runner's validation (precision, data
// files, model shape); they are checked when the runner is built (not in the sanitizer tree).
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <boost/filesystem.hpp>
#include <boost/process.hpp>

#include "tests/support/file_text.h"
#include "tests/support/temp_dir.h"

namespace {

using ::batchlab::testing::ReadFileText;

namespace bp = boost::process;
namespace fs = boost::filesystem;

struct Entry {
  std::string file, needle;
  bool runner_only = false;
};

std::vector<Entry> ReadManifest() {
  std::vector<Entry> out;
  std::ifstream in(std::string(HOSTILE_DIR) + "/expected.tsv");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    Entry e;
    size_t tab = line.find('\t');
    e.file = line.substr(0, tab);
    std::string rest = line.substr(tab + 1);
    size_t tab2 = rest.find('\t');
    e.needle = rest.substr(0, tab2);
    e.runner_only = tab2 != std::string::npos && rest.substr(tab2 + 1) == "runner";
    out.push_back(e);
  }
  return out;
}

class HostileSpecsTest : public ::testing::Test {
 protected:
  struct Result {
    int exit_code = -1;
    std::string err;
  };

  Result Batchlab(const std::vector<std::string>& args) {
    const std::string err_path = dir_.File("stderr.txt");
    std::remove(err_path.c_str());  // boost.process opens without truncating
    bp::environment env = boost::this_process::environment();
    env.set("FAKE_RUNNER_PID_DIR", Pids());  // a launched fake rank would leave its pid file
    std::vector<std::string> all = {"--db", Db()};
    all.insert(all.end(), args.begin(), args.end());
    bp::child c(BATCHLAB_BIN, bp::args(all), env, bp::std_out > bp::null, bp::std_err > err_path,
                bp::std_in < bp::null);
    c.wait();
    return {c.exit_code(), ReadFileText(err_path)};
  }

  std::string Db() const { return dir_.File("batchlab.db"); }
  std::string Pids() const { return dir_.File("pids"); }
  static std::string Runner() {
#ifdef REAL_RUNNER
    return REAL_RUNNER;
#else
    return FAKE_RUNNER;
#endif
  }

  batchlab::testing::TempDir dir_;
};

TEST_F(HostileSpecsTest, EverySpecExits2NamingThePathLaunchingNothingAndLeavingTheDbAlone) {
  // A database that already holds a finished sweep.
  fs::create_directories(Pids());
  const std::string good = dir_.File("good.json");
  std::ofstream(good) << R"({"name": "good", "base": {"mode": "noop", "batch_size": 64}})";
  Result first = Batchlab({"sweep", "run", good, "--runs-dir", dir_.File("runs"), "--runner",
                           FAKE_RUNNER, "--slots", "1"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  fs::remove_all(Pids());
  fs::create_directories(Pids());
  const std::string before = ReadFileText(Db());
  struct stat st_before {};
  ASSERT_EQ(stat(Db().c_str(), &st_before), 0);

  const std::vector<Entry> entries = ReadManifest();
  ASSERT_GE(entries.size(), 100u);
  // Every file is listed, and every listed file exists.
  size_t files = 0;
  for (fs::directory_iterator it(HOSTILE_DIR), end; it != end; ++it) {
    if (it->path().extension() != ".json") continue;
    ++files;
    bool listed = false;
    for (const Entry& e : entries) listed = listed || e.file == it->path().filename().string();
    EXPECT_TRUE(listed) << it->path() << " is not in expected.tsv";
  }
  EXPECT_EQ(files, entries.size());

  const std::string runs = dir_.File("runs-hostile");
  int checked = 0, skipped = 0;
  for (const Entry& e : entries) {
#ifndef REAL_RUNNER
    if (e.runner_only) {
      ++skipped;
      continue;
    }
#endif
    SCOPED_TRACE(e.file);
    const std::string spec = std::string(HOSTILE_DIR) + "/" + e.file;
    Result run =
        Batchlab({"sweep", "run", spec, "--runs-dir", runs, "--runner", Runner(), "--slots", "2"});
    EXPECT_EQ(run.exit_code, 2) << run.err;
    EXPECT_NE(run.err.find(e.needle), std::string::npos)
        << "sweep run: " << run.err.substr(0, 2000) << "\nexpected to contain: " << e.needle;
    EXPECT_NE(run.err.find(e.file), std::string::npos) << run.err.substr(0, 2000);
    // --validate: the plan judges the configs as `sweep run` does, user programs included.
    Result plan = Batchlab({"sweep", "plan", spec, "--runner", Runner(), "--validate"});
    EXPECT_EQ(plan.exit_code, 2) << plan.err;
    EXPECT_NE(plan.err.find(e.needle), std::string::npos)
        << "sweep plan: " << plan.err.substr(0, 2000) << "\nexpected to contain: " << e.needle;
    EXPECT_FALSE(fs::exists(runs)) << "an attempt folder was created";
    EXPECT_TRUE(fs::is_empty(Pids())) << "a rank was started";
    ++checked;
  }
  struct stat st_after {};
  ASSERT_EQ(stat(Db().c_str(), &st_after), 0);
  EXPECT_EQ(ReadFileText(Db()), before);
  EXPECT_EQ(st_after.st_mtim.tv_sec, st_before.st_mtim.tv_sec);
  EXPECT_EQ(st_after.st_mtim.tv_nsec, st_before.st_mtim.tv_nsec);
  EXPECT_FALSE(fs::exists(Db() + "-wal") && fs::file_size(Db() + "-wal") > 0);
  fmt::print("hostile specs: {} refused with exit 2, {} skipped (need the real runner)\n", checked,
             skipped);
}

}  // namespace
