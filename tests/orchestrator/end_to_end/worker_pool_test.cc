// Warm workers end to end (`batchlab sweep run --workers reuse|fresh` with the real
// batchlab-runner): a warm sweep records the same losses, step by step, as a cold one, through
// fewer workers than runs; a worker killed in the middle of a run is replaced and the run retried.
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <boost/process.hpp>
#include <nlohmann/json.hpp>

#include "results/database.h"
#include "results/schema.h"
#include "tests/support/temp_dir.h"
#include "tests/support/file_text.h"
#include "tests/support/stored_losses.h"

namespace batchlab::orchestrator {
namespace {

using ::batchlab::testing::ReadFileText;

namespace bp = boost::process;
namespace fs = std::filesystem;

bp::child StartSweep(const testing::TempDir& dir, const std::string& spec, const std::string& name,
                     const std::string& workers, int slots) {
  return bp::child(BATCHLAB_BIN,
                   bp::args({"--db", dir.File(name + ".db"), "sweep", "run", spec, "--runs-dir",
                             dir.File("runs-" + name), "--runner", RUNNER, "--slots",
                             std::to_string(slots), "--workers", workers}),
                   bp::std_out > bp::null, bp::std_err > dir.File(name + ".err"));
}

// The worker folders named by the attempts' launch.json files under `runs`.
std::vector<std::string> WorkerDirs(const std::string& runs) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(runs)) {
    if (e.path().filename() != "launch.json") continue;
    auto j = nlohmann::json::parse(ReadFileText(e.path().string()), nullptr, false);
    out.push_back(j.is_object() ? j.value("worker_dir", std::string()) : std::string());
  }
  return out;
}

TEST(WorkerPoolTest, WarmSweepRecordsTheSameLossesAsAColdOneThroughOneWorker) {
  testing::TempDir dir;
  const std::string spec = dir.File("spec.json");
  std::ofstream(spec) << R"({"name": "warm", "base": {"data": {"name": "fashion-mnist",
      "samples": 4000}, "model": {"name": "mlp", "hidden": [32]},
      "lr": {"base": 0.05, "base_batch_size": 64}, "batch_size": 64,
      "budget": {"steps": 25}, "eval": {"every_steps": 25, "subset": 500}},
      "axes": {"lr.base": [0.05, 0.1]}, "seeds": [1, 2], "resources": {"retries": 0}})";
  for (const char* workers : {"fresh", "reuse"}) {
    bp::child c = StartSweep(dir, spec, workers, workers, 1);
    c.wait();
    ASSERT_EQ(c.exit_code(), 0) << ReadFileText(dir.File(std::string(workers) + ".err"));
  }
  const auto cold = ::batchlab::testing::StoredLosses(dir.File("fresh.db")),
             warm = ::batchlab::testing::StoredLosses(dir.File("reuse.db"));
  EXPECT_EQ(cold.size(), 4u * 25u);
  EXPECT_EQ(warm, cold);  // same run ids, same steps, the same losses bit for bit
  const std::vector<std::string> fresh_workers = WorkerDirs(dir.File("runs-fresh"));
  const std::vector<std::string> reused = WorkerDirs(dir.File("runs-reuse"));
  ASSERT_EQ(reused.size(), 4u);
  EXPECT_EQ(std::set<std::string>(fresh_workers.begin(), fresh_workers.end()),
            std::set<std::string>{""});                                       // cold: no worker
  EXPECT_EQ(std::set<std::string>(reused.begin(), reused.end()).size(), 1u);  // one warm worker
  EXPECT_FALSE(reused[0].empty());
  EXPECT_FALSE(fs::exists(reused[0]));  // the pool removed its folders when the sweep ended
}

TEST(WorkerPoolTest, KilledWorkerIsReplacedAndItsRunRetried) {
  testing::TempDir dir;
  const std::string spec = dir.File("spec.json");
  std::ofstream(spec) << R"({"name": "kill", "base": {"data": {"name": "synthetic-linear"},
      "model": {"name": "logreg"}, "lr": {"base": 0.05, "base_batch_size": 64},
      "batch_size": 64, "budget": {"steps": 8000}, "eval": {"every_steps": 1000, "subset": 0}},
      "seeds": [1, 2], "resources": {"retries": 1, "retry_backoff_seconds": 0}})";
  bp::child c = StartSweep(dir, spec, "kill", "reuse", 1);
  // Wait for a run to be training on its worker (step lines, no end line), then kill the rank.
  std::string worker;
  for (int i = 0; i < 6000 && worker.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!fs::exists(dir.File("runs-kill"))) continue;
    for (const auto& e : fs::recursive_directory_iterator(dir.File("runs-kill"))) {
      if (e.path().filename() != "metrics.jsonl") continue;
      const std::string lines = ReadFileText(e.path().string());
      const std::string launch = (e.path().parent_path() / "launch.json").string();
      if (lines.find("\"kind\":\"step\"") == std::string::npos ||
          lines.find("\"kind\":\"end\"") != std::string::npos || !fs::exists(launch)) {
        continue;
      }
      auto j = nlohmann::json::parse(ReadFileText(launch), nullptr, false);
      if (j.is_object()) worker = j.value("worker_dir", std::string());
    }
  }
  ASSERT_FALSE(worker.empty()) << ReadFileText(dir.File("kill.err"));
  const pid_t rank = std::stoi(ReadFileText(worker + "/ready.rank0"));
  ASSERT_EQ(::kill(rank, SIGKILL), 0);
  c.wait();
  EXPECT_EQ(c.exit_code(), 0) << ReadFileText(dir.File("kill.err"));
  auto rdb = results::OpenReadOnly(dir.File("kill.db"));
  ASSERT_TRUE(rdb.ok());
  EXPECT_EQ(*(*rdb)->QueryInt("SELECT count(*) FROM runs WHERE state = 'completed'"), 2);
  EXPECT_EQ(*(*rdb)->QueryInt("SELECT max(attempt) FROM runs"), 2);  // the killed run, again
  const std::vector<std::string> workers = WorkerDirs(dir.File("runs-kill"));
  EXPECT_EQ(workers.size(), 3u);  // 2 runs + the retry
  EXPECT_GE(std::set<std::string>(workers.begin(), workers.end()).size(), 2u);  // a new worker
}

}  // namespace
}  // namespace batchlab::orchestrator
