// Job packing (worker_pool.h under Slurm) at the Launcher seam: a fake inner launcher that
// behaves like the Slurm one (a job per Start, launch.json with its job id, scancel as
// Terminate) and a fake clock. What is checked: the allocation time-limit rule, idle workers
// retired, a worker pending in the queue not taken for an old runner, launch.json naming the
// worker's job for CleanUpStale, and the worker's own log kept when it ends mid-run. The real
// Slurm runs of the same pool are in slurm_test.cc.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "orchestrator/launch/worker_pool.h"
#include "tests/support/temp_dir.h"
#include "tests/support/file_text.h"

namespace batchlab::orchestrator {
namespace {

using ::batchlab::testing::ReadFileText;

namespace stdfs = std::filesystem;

// Stands in for the Slurm launcher: each Start is a job numbered from 1 whose state the test
// sets; Terminate and Kill end it as scancel does (a signal, no exit code).
class FakeSlurm final : public Launcher {
 public:
  struct FakeJob final : Job {
    JobStatus Poll() override { return status; }
    void Terminate() override { Cancel(); }
    void Kill() override { Cancel(); }
    void Cancel() {
      ++cancels;
      log->push_back("scancel " + id);
      if (status.done) return;
      status.done = true;
      status.signal = 15;
      status.detail = "CANCELLED";
    }
    JobStatus status;  // not done: pending or running
    int cancels = 0;
    std::string id;
    std::vector<std::string>* log = nullptr;
  };

  const char* name() const override { return "slurm"; }
  StatusOr<std::unique_ptr<Job>> Start(const LaunchRequest& r) override {
    started.push_back(r);
    std::ofstream(r.attempt_dir + "/launch.json")
        << nlohmann::json{{"backend", "slurm"}, {"job_id", std::to_string(started.size())}}.dump();
    auto job = std::make_unique<FakeJob>();
    job->id = std::to_string(started.size());
    job->log = &log;
    log.push_back("sbatch " + job->id);
    jobs.push_back(job.get());
    return std::unique_ptr<Job>(std::move(job));
  }
  void CleanUpStale(const std::string& attempt_dir) override { cleaned.push_back(attempt_dir); }

  std::vector<LaunchRequest> started;  // every job: workers (--worker) and cold runs (--config)
  std::vector<FakeJob*> jobs;
  std::vector<std::string> cleaned;
  std::vector<std::string> log;  // "sbatch <id>", "scancel <id>" in order
};

class PackingTest : public ::testing::Test {
 protected:
  // A pool in front of FakeSlurm with a 600 s allocation and a fake clock.
  void MakePool(double idle_seconds = 0, bool idle_workers_hold_nodes = true) {
    auto inner = std::make_unique<FakeSlurm>();
    slurm_ = inner.get();
    WorkerPoolSettings s;
    s.runner = "/fake/runner";
    s.max_workers = 4;
    s.dir = dir_.path() + "/runs/.workers";
    s.allocation_seconds = 600;
    s.idle_seconds = idle_seconds;
    s.idle_workers_hold_nodes = idle_workers_hold_nodes;
    s.clock = [this] { return now_; };
    pool_ = MakeWorkerPool(std::move(inner), std::move(s));
  }

  // A run of the built-in runner (world size 1, shape "a" or another env for another shape).
  LaunchRequest Request(double timeout_seconds, const std::string& shape = "a") {
    const std::string attempt = dir_.path() + "/runs/attempt-" + std::to_string(++runs_);
    stdfs::create_directories(attempt);
    LaunchRequest r;
    r.run_id = "run" + std::to_string(runs_);
    r.attempt_dir = attempt;
    r.config_path = attempt + "/config.json";
    r.rank_command = {"/fake/runner", "--config", r.config_path};
    r.timeout_seconds = timeout_seconds;
    r.env = {{"SHAPE", shape}};
    return r;
  }

  std::unique_ptr<Job> Start(const LaunchRequest& r) {
    auto job = pool_->Start(r);
    EXPECT_TRUE(job.ok()) << job.status().message();
    return job.ok() ? std::move(job).value() : nullptr;
  }

  // The worker folder and job number the pool handed `r` to (from its launch.json).
  nlohmann::json Launch(const LaunchRequest& r) {
    return nlohmann::json::parse(ReadFileText(r.attempt_dir + "/launch.json"));
  }

  // Plays the worker: says ready and reports the run handed to it done with `code`.
  void Complete(const LaunchRequest& r, int code = 0) {
    const nlohmann::json launch = Launch(r);
    const std::string wdir = launch["worker_dir"];
    std::ofstream(wdir + "/ready.rank0") << "1\n";
    std::ofstream(fmt::format("{}/done-{}.rank0", wdir, launch["worker_job"].get<int>()))
        << code << "\n";
  }

  testing::TempDir dir_;
  FakeSlurm* slurm_ = nullptr;
  std::unique_ptr<Launcher> pool_;
  double now_ = 1000;
  int runs_ = 0;
};

TEST_F(PackingTest, RunsShareAnAllocationWhileTheirTimeoutStillFitsInIt) {
  MakePool();
  // Timeout 200 s in a 600 s allocation: a run joins while the worker's age is at most 400 s.
  LaunchRequest r1 = Request(200);
  auto j1 = Start(r1);
  Complete(r1);
  EXPECT_TRUE(j1->Poll().done);
  now_ += 400;  // age 400 + 200 = 600: fits exactly
  LaunchRequest r2 = Request(200);
  auto j2 = Start(r2);
  Complete(r2);
  EXPECT_EQ(j2->Poll().exit_code, 0);
  ASSERT_EQ(slurm_->started.size(), 1u);  // one sbatch job for both runs
  EXPECT_EQ(slurm_->started[0].rank_command[1], "--worker");
  EXPECT_EQ(slurm_->started[0].run_id, "worker-w1");  // job name batchlab-worker-w1-1
  EXPECT_EQ(Launch(r1)["job_id"], "1");
  EXPECT_EQ(Launch(r2)["job_id"], "1");
  EXPECT_EQ(Launch(r2)["worker_job"], 2);
  now_ += 1;  // age 401 + 200 > 600: the allocation could end first
  LaunchRequest r3 = Request(200);
  auto j3 = Start(r3);
  ASSERT_EQ(slurm_->started.size(), 2u);
  EXPECT_EQ(Launch(r3)["job_id"], "2");
  EXPECT_EQ(slurm_->jobs[0]->cancels, 1);  // the old worker was retired (scancel)
  EXPECT_TRUE(stdfs::exists(Launch(r1)["worker_dir"].get<std::string>() + "/quit"));
}

TEST_F(PackingTest, RunsWithoutATimeoutGetAWholeAllocationEach) {
  MakePool();
  LaunchRequest r1 = Request(0);
  auto j1 = Start(r1);
  Complete(r1);
  EXPECT_TRUE(j1->Poll().done);
  now_ += 1;
  LaunchRequest r2 = Request(0);
  auto j2 = Start(r2);
  EXPECT_EQ(slurm_->started.size(), 2u);
  EXPECT_NE(Launch(r1)["job_id"], Launch(r2)["job_id"]);
  Complete(r2);
  EXPECT_TRUE(j2->Poll().done);
  // A timeout longer than the allocation counts as the allocation.
  now_ += 1;
  LaunchRequest r3 = Request(1e6);
  auto j3 = Start(r3);
  EXPECT_EQ(slurm_->started.size(), 3u);
}

TEST_F(PackingTest, AnIdleWorkerIsRetiredAfterIdleSeconds) {
  MakePool(/*idle_seconds=*/30);
  LaunchRequest a1 = Request(60), a2 = Request(60);  // side by side: a worker each
  auto j1 = Start(a1);
  auto j2 = Start(a2);
  ASSERT_EQ(slurm_->jobs.size(), 2u);
  Complete(a1);
  EXPECT_TRUE(j1->Poll().done);  // worker 1 idle from now
  now_ += 29;
  EXPECT_FALSE(j2->Poll().done);
  EXPECT_EQ(slurm_->jobs[0]->cancels, 0);
  now_ += 1;
  EXPECT_FALSE(j2->Poll().done);           // polling a run also retires idle workers
  EXPECT_EQ(slurm_->jobs[0]->cancels, 1);  // 30 s idle: its allocation is given back
  EXPECT_EQ(slurm_->jobs[1]->cancels, 0);  // the busy one stays
}

TEST_F(PackingTest, IdleWorkersAreRetiredBeforeAWorkerOfAnotherShapeIsSubmitted) {
  // The executor counts an idle worker's nodes as free: a job for another shape could pend
  // behind them, so they are given back first.
  MakePool();
  LaunchRequest a = Request(60, "a");
  auto ja = Start(a);
  Complete(a);
  EXPECT_TRUE(ja->Poll().done);
  LaunchRequest b = Request(60, "b");
  auto jb = Start(b);
  EXPECT_EQ(slurm_->log, (std::vector<std::string>{"sbatch 1", "scancel 1", "sbatch 2"}));
  Complete(b);
  EXPECT_TRUE(jb->Poll().done);  // (a finished run touches nothing of the pool it came from)
  // The local pool (idle workers hold nothing the scheduler counts) keeps it for later.
  pool_.reset();
  MakePool(0, /*idle_workers_hold_nodes=*/false);
  LaunchRequest c = Request(60, "a");
  auto jc = Start(c);
  Complete(c);
  EXPECT_TRUE(jc->Poll().done);
  LaunchRequest d = Request(60, "b");
  auto jd = Start(d);
  EXPECT_EQ(slurm_->log, (std::vector<std::string>{"sbatch 1", "sbatch 2"}));
}

TEST_F(PackingTest, AWorkerPendingInTheQueueIsNotTakenForAnOldRunner) {
  MakePool();
  LaunchRequest r = Request(0);
  auto job = Start(r);
  // Pending for an hour: no ready file, no end; the run waits.
  for (int i = 0; i < 10; ++i) {
    now_ += 360;
    JobStatus st = job->Poll();
    EXPECT_FALSE(st.done);
  }
  // Cancelled while pending (the sweep's stop, a timeout): the run ends with the signal and is
  // not launched again cold, though the worker never said `ready`.
  job->Terminate();
  JobStatus st = job->Poll();
  EXPECT_TRUE(st.done);
  EXPECT_EQ(st.signal, 15);
  EXPECT_EQ(slurm_->started.size(), 1u);
  // The same for a job the backend ended (a signal: scancel by an administrator, NODE_FAIL).
  LaunchRequest r2 = Request(0);
  auto job2 = Start(r2);
  slurm_->jobs.back()->status.done = true;
  slurm_->jobs.back()->status.signal = 9;
  EXPECT_EQ(job2->Poll().signal, 9);
  EXPECT_EQ(slurm_->started.size(), 2u);
}

TEST_F(PackingTest, AWorkerThatExitsBeforeReadyIsARunnerWithoutTheProtocol) {
  MakePool();
  LaunchRequest r = Request(0);
  auto job = Start(r);
  slurm_->jobs[0]->status.done = true;
  slurm_->jobs[0]->status.exit_code = 2;  // e.g. an old runner refusing --worker
  EXPECT_FALSE(job->Poll().done);         // the run was started cold instead
  ASSERT_EQ(slurm_->started.size(), 2u);
  EXPECT_EQ(slurm_->started[1].rank_command, r.rank_command);
  LaunchRequest r2 = Request(0);
  auto job2 = Start(r2);  // and every later run too
  ASSERT_EQ(slurm_->started.size(), 3u);
  EXPECT_EQ(slurm_->started[2].rank_command, r2.rank_command);
}

TEST_F(PackingTest, LaunchJsonNamesTheWorkersJobAndCleanUpStaleStopsItThroughSlurm) {
  MakePool();
  LaunchRequest r = Request(60);
  auto job = Start(r);
  const nlohmann::json launch = Launch(r);
  EXPECT_EQ(launch["backend"], "slurm");
  EXPECT_EQ(launch["job_id"], "1");
  // Under the runs folder the compute nodes see, not $TMPDIR.
  const std::string wdir = launch["worker_dir"];
  EXPECT_EQ(wdir.rfind(dir_.path() + "/runs/.workers/batchlab-workers-", 0), 0u) << wdir;
  pool_->CleanUpStale(r.attempt_dir);  // a later orchestrator: the inner launcher scancels
  EXPECT_EQ(slurm_->cleaned, std::vector<std::string>{r.attempt_dir});
}

TEST_F(PackingTest, AWorkerEndingMidRunLeavesItsLogInTheAttempt) {
  MakePool();
  LaunchRequest r = Request(0);
  auto job = Start(r);
  const std::string wdir = Launch(r)["worker_dir"];
  std::ofstream(wdir + "/ready.rank0") << "1\n";
  std::ofstream(wdir + "/stderr.log") << "slurmstepd: *** JOB 1 CANCELLED DUE TO TIME LIMIT ***\n";
  slurm_->jobs[0]->status.done = true;
  slurm_->jobs[0]->status.signal = 15;
  slurm_->jobs[0]->status.detail = "TIMEOUT";
  JobStatus st = job->Poll();
  EXPECT_TRUE(st.done);
  EXPECT_EQ(st.signal, 15);
  EXPECT_EQ(st.detail, "TIMEOUT");
  EXPECT_NE(ReadFileText(r.attempt_dir + "/stderr.log").find("DUE TO TIME LIMIT"), std::string::npos);
  // The pool removes its folders when it ends; the attempt keeps the log.
  pool_.reset();
  EXPECT_FALSE(stdfs::exists(wdir));
}

}  // namespace
}  // namespace batchlab::orchestrator
