// The Slurm backend end to end against a real slurmctld + slurmd + munged on localhost, started
// by the CTest fixture scripts/slurm/start.sh (SLURM_CONF points at its config). Each run is an
// sbatch job running mpirun inside the allocation; states and exit codes are read back from
// Slurm; SIGINT maps to scancel. With --workers reuse (the default) runs of one shape share an
// allocation (job packing, orchestrator/launch/worker_pool.h).
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <boost/process.hpp>
#include <nlohmann/json.hpp>

#include "orchestrator/process/captured_command.h"
#include "orchestrator/launch/slurm_launcher.h"
#include "results/database.h"
#include "results/schema.h"
#include "tests/support/temp_dir.h"
#include "tests/support/stored_losses.h"

namespace batchlab::orchestrator {
namespace {

namespace bp = boost::process;
namespace fs = boost::filesystem;

class SlurmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* conf = std::getenv("SLURM_CONF");
    ASSERT_TRUE(conf != nullptr && fs::exists(conf))
        << "SLURM_CONF is not set: run through ctest (fixture scripts/slurm/start.sh)";
  }

  std::string Db() const { return dir_.path() + "/batchlab.db"; }

  std::string WriteSpec(const std::string& text) {
    std::string path = dir_.path() + "/spec.json";
    std::ofstream(path) << text;
    return path;
  }

  std::vector<std::string> RunArgs(const std::string& spec,
                                   const std::string& runner = FAKE_RUNNER) const {
    return {"--db",     Db(),         "sweep",
            "run",      spec,         "--backend",
            "slurm",    "--runs-dir", dir_.path() + "/runs",
            "--runner", runner,       "--slots",
            "2"};
  }

  int Cli(const std::vector<std::string>& args) {
    const std::string err = dir_.path() + "/err.txt";
    std::remove(err.c_str());  // boost.process opens without truncating: no stale tail
    bp::child c(BATCHLAB_BIN, bp::args(args), bp::std_out > bp::null, bp::std_err > err,
                bp::std_in < bp::null);
    c.wait();
    return c.exit_code();
  }

  std::string Err() const {
    std::ifstream in(dir_.path() + "/err.txt");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  int64_t Query(const std::string& sql) {
    auto db = results::OpenReadOnly(Db());
    EXPECT_TRUE(db.ok()) << db.status().message();
    if (!db.ok()) return -1;
    auto v = (*db)->QueryInt(sql);
    EXPECT_TRUE(v.ok()) << v.status().message();
    return v.ok() ? *v : -1;
  }

  // Runs `spec` with the real runner into its own database and runs folder, one run at a time.
  int RealSweep(const std::string& spec, const std::string& name, const std::string& workers) {
    return Cli({"--db", dir_.path() + "/" + name + ".db", "sweep", "run", spec, "--backend",
                "slurm", "--runs-dir", dir_.path() + "/runs-" + name, "--runner", REAL_RUNNER,
                "--slots", "1", "--workers", workers});
  }

  // (run id, step) -> loss of every run in database `name`.
  std::map<std::pair<std::string, int64_t>, double> Losses(const std::string& name) {
    return ::batchlab::testing::StoredLosses(dir_.path() + "/" + name + ".db");
  }

  // Every attempt's launch.json under runs-<name>.
  std::vector<nlohmann::json> Launches(const std::string& name) {
    std::vector<nlohmann::json> out;
    boost::system::error_code ec;
    for (fs::recursive_directory_iterator it(dir_.path() + "/runs-" + name, ec), end;
         !ec && it != end; it.increment(ec)) {
      if (it->path().filename() != "launch.json") continue;
      std::ifstream in(it->path().string());
      out.push_back(nlohmann::json::parse(in));
    }
    return out;
  }

  testing::TempDir dir_;
};

TEST_F(SlurmTest, ParsesScontrolOutput) {
  auto info = ParseScontrolJob(
      "JobId=7 JobName=x JobState=FAILED Reason=NonZeroExitCode ExitCode=3:0 "
      "ReqNodeList=(null) NodeList=localhost BatchHost=localhost");
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->state, "FAILED");
  EXPECT_EQ(info->exit_code, 3);
  EXPECT_FALSE(info->signal.has_value());
  EXPECT_EQ(info->nodes, "localhost");
  EXPECT_FALSE(ParseScontrolJob("slurm_load_jobs error: Invalid job id specified").has_value());
}

TEST_F(SlurmTest, UserProgramsRunUnderMpirunAndAsSlurmTasks) {
  // launch mpirun: sbatch -> mpirun -> batchlab-rank; torchrun: sbatch -> srun -> batchlab-rank.
  std::string spec = WriteSpec(fmt::format(
      R"({{"name": "slurm_program", "base": {{"batch_size": 64, "ranks_per_node": 2,
          "program": {{"command": ["/usr/bin/python3", "{}"]}}, "params": {{"depth": 1}}}},
          "axes": {{"program.launch": ["mpirun", "torchrun"]}},
          "resources": {{"retries": 0}}, "slurm": {{"time_limit_minutes": 5}}}})",
      USER_PROGRAM));
  int code = Cli(RunArgs(spec));
  ASSERT_EQ(code, 0) << Err();
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE state = 'completed' AND steps = 3"), 2);
  // Every rank of both runs saw RANK/WORLD_SIZE and rank 0 met the other at MASTER_ADDR:PORT.
  int ranks = 0;
  boost::system::error_code ec;
  for (fs::recursive_directory_iterator it(dir_.path() + "/runs", ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name != "rank0.json" && name != "rank1.json") continue;
    std::ifstream in(it->path().string());
    auto env = nlohmann::json::parse(in);
    EXPECT_EQ(env["WORLD_SIZE"], "2");
    EXPECT_EQ(env["LOCAL_WORLD_SIZE"], "2");
    if (name == "rank0.json") {
      EXPECT_EQ(env["met"].size(), 2u);
    }
    ++ranks;
  }
  EXPECT_EQ(ranks, 4);
}

TEST_F(SlurmTest, SweepRunsAsSbatchJobsAndReadsStatesBackFromSlurm) {
  std::string spec = WriteSpec(R"({"name": "slurm", "base": {"mode": "noop"},
      "axes": {"batch_size": [64, 128], "ranks_per_node": [1, 2]},
      "launch": {"env": {"FAKE_RUNNER_SECONDS": "0.1", "FAKE_RUNNER_FAIL_BATCH": "128"}},
      "resources": {"retries": 0},
      "slurm": {"time_limit_minutes": 5}})");
  int code = Cli(RunArgs(spec));
  EXPECT_EQ(code, 1) << Err();  // the batch-128 runs fail on purpose
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE batch_size = 64 AND state = 'completed' AND "
                  "exit_code = 0"),
            2);
  // Exit code 1 of the job, as Slurm reports it (ExitCode=1:0).
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE batch_size = 128 AND state = 'failed' AND "
                  "exit_code = 1"),
            2);
  // Every attempt went through sbatch and Slurm knows it.
  EXPECT_EQ(Query("SELECT count(*) FROM ingest_cursors WHERE saw_end = 1"), 2);
  boost::system::error_code ec;
  int jobs = 0;
  for (fs::recursive_directory_iterator it(dir_.path() + "/runs", ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->path().filename() != "launch.json") continue;
    std::ifstream in(it->path().string());
    auto launch = nlohmann::json::parse(in);
    EXPECT_EQ(launch["backend"], "slurm");
    auto r = RunCapturedCommand({"scontrol", "show", "job", "-o", launch["job_id"]});
    ASSERT_TRUE(r.ok());
    auto info = ParseScontrolJob(r->out);
    ASSERT_TRUE(info.has_value()) << r->out << r->err;
    EXPECT_TRUE(info->state == "COMPLETED" || info->state == "FAILED") << info->state;
    ++jobs;
  }
  EXPECT_EQ(jobs, 4);
  // Resume: the completed runs are skipped, the failed ones are submitted again.
  EXPECT_EQ(Cli(RunArgs(spec)), 1);
  EXPECT_NE(Err().find("2 of 4 runs already finished; skipped"), std::string::npos) << Err();
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE batch_size = 128 AND attempt = 2"), 2);
}

TEST_F(SlurmTest, RealRunnerTrainsOneAndTwoRanksInsideTheAllocation) {
  // The real batchlab-runner on real Fashion-MNIST (a subset), as sbatch -> mpirun jobs.
  std::string spec = WriteSpec(R"({"name": "slurm-real", "base": {"batch_size": 64,
      "data": {"name": "fashion-mnist", "samples": 2000, "test_samples": 500},
      "model": {"name": "mlp", "hidden": [32]}, "lr": {"base": 0.05, "base_batch_size": 64},
      "budget": {"steps": 20}, "eval": {"every_steps": 10}, "threads": 1},
      "axes": {"ranks_per_node": [1, 2]},
      "slurm": {"time_limit_minutes": 5}})");
  EXPECT_EQ(Cli(RunArgs(spec, REAL_RUNNER)), 0) << Err();
  EXPECT_EQ(Query("SELECT count(*) FROM run_summary WHERE state = 'completed' AND exit_code = 0 "
                  "AND steps = 20 AND final_test_accuracy > 0.1"),
            2);
  EXPECT_EQ(Query("SELECT count(DISTINCT m.run_id) FROM run_metrics m JOIN run_summary s "
                  "USING (run_id) WHERE m.name = 'loss' AND s.world_size IN (1, 2)"),
            2);
}

TEST_F(SlurmTest, PackedRunsShareOneAllocationAndRecordTheSameLossesAsJobsOfTheirOwn) {
  // Three runs of one shape with a timeout well inside the time limit: with --workers reuse
  // they run in sequence in one sbatch job (one warm worker), with fresh in three.
  std::string spec = WriteSpec(R"({"name": "slurm-pack", "base": {"batch_size": 64,
      "data": {"name": "synthetic-linear"}, "model": {"name": "logreg"},
      "lr": {"base": 0.05, "base_batch_size": 64}, "budget": {"steps": 20},
      "eval": {"every_steps": 10, "subset": 0}, "threads": 1},
      "seeds": [1, 2, 3], "resources": {"retries": 0, "timeout_seconds": 120},
      "slurm": {"time_limit_minutes": 5}})");
  ASSERT_EQ(RealSweep(spec, "fresh", "fresh"), 0) << Err();
  ASSERT_EQ(RealSweep(spec, "reuse", "reuse"), 0) << Err();
  const auto cold = Losses("fresh"), packed = Losses("reuse");
  EXPECT_EQ(cold.size(), 3u * 20u);
  EXPECT_EQ(packed, cold);  // same run ids, same steps, the same losses bit for bit

  auto job_ids = [](const std::vector<nlohmann::json>& launches) {
    std::set<std::string> ids;
    for (const auto& l : launches) ids.insert(l.value("job_id", std::string()));
    return ids;
  };
  const std::vector<nlohmann::json> fresh = Launches("fresh"), reuse = Launches("reuse");
  ASSERT_EQ(fresh.size(), 3u);
  ASSERT_EQ(reuse.size(), 3u);           // the worker's own folder is gone with the sweep
  EXPECT_EQ(job_ids(fresh).size(), 3u);  // a job per run
  const std::set<std::string> packed_ids = job_ids(reuse);
  ASSERT_EQ(packed_ids.size(), 1u);  // one job for the three runs
  std::set<int> worker_jobs;
  for (const auto& l : reuse) {
    EXPECT_EQ(l["backend"], "slurm");
    EXPECT_EQ(l["worker_dir"], reuse[0]["worker_dir"]);
    worker_jobs.insert(l["worker_job"].get<int>());
  }
  EXPECT_EQ(worker_jobs, (std::set<int>{1, 2, 3}));
  EXPECT_NE(reuse[0]["worker_dir"].get<std::string>().find("/runs-reuse/.workers/"),
            std::string::npos);
  // Slurm agrees: that job is the worker (retired when the sweep ended), not one of the runs.
  auto r = RunCapturedCommand({"scontrol", "show", "job", "-o", *packed_ids.begin()});
  ASSERT_TRUE(r.ok());
  EXPECT_NE(r->out.find("JobName=batchlab-worker-w1-1"), std::string::npos) << r->out;
  auto info = ParseScontrolJob(r->out);
  ASSERT_TRUE(info.has_value()) << r->out << r->err;
  EXPECT_TRUE(IsSlurmTerminalState(info->state)) << info->state;
}

TEST_F(SlurmTest, RunsWithoutATimeoutAreNotPackedBeyondTheTimeLimit) {
  // No resources.timeout_seconds: a run may need the whole time limit, so each gets its own
  // allocation even with --workers reuse.
  std::string spec = WriteSpec(R"({"name": "slurm-nopack", "base": {"batch_size": 64,
      "data": {"name": "synthetic-linear"}, "model": {"name": "logreg"},
      "lr": {"base": 0.05, "base_batch_size": 64}, "budget": {"steps": 5},
      "eval": {"every_steps": 5, "subset": 0}, "threads": 1},
      "seeds": [1, 2], "resources": {"retries": 0}, "slurm": {"time_limit_minutes": 5}})");
  ASSERT_EQ(RealSweep(spec, "nopack", "reuse"), 0) << Err();
  std::set<std::string> ids, workers;
  for (const auto& l : Launches("nopack")) {
    ids.insert(l.value("job_id", std::string()));
    workers.insert(l.value("worker_dir", std::string()));
  }
  EXPECT_EQ(ids.size(), 2u);
  EXPECT_EQ(workers.size(), 2u);
}

TEST_F(SlurmTest, AResumedSweepCancelsTheWorkerJobAKilledOrchestratorLeftBehind) {
  // The orchestrator is killed (SIGKILL) while a run trains in a packed worker: the worker's
  // job lives on in Slurm. Resuming reads the attempt's launch.json (the worker's job id) and
  // scancels it before running the run again.
  std::string spec = WriteSpec(R"({"name": "slurm-stale", "base": {"batch_size": 64,
      "data": {"name": "synthetic-linear"}, "model": {"name": "logreg"},
      "lr": {"base": 0.05, "base_batch_size": 64}, "budget": {"steps": 20000},
      "eval": {"every_steps": 1000, "subset": 0}, "threads": 1},
      "resources": {"retries": 0, "timeout_seconds": 120}, "slurm": {"time_limit_minutes": 5}})");
  const std::vector<std::string> args = {"--db",     Db(),         "sweep",
                                         "run",      spec,         "--backend",
                                         "slurm",    "--runs-dir", dir_.path() + "/runs-stale",
                                         "--runner", REAL_RUNNER,  "--slots",
                                         "1"};
  bp::child c(BATCHLAB_BIN, bp::args(args), bp::std_out > bp::null, bp::std_err > bp::null,
              bp::std_in < bp::null);
  // Wait for the run to train in its worker (step lines, no end line yet).
  std::string job_id;
  for (int i = 0; i < 600 && job_id.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    for (const auto& launch : Launches("stale")) {
      const std::string metrics = launch.value("attempt_dir", std::string()) + "/metrics.jsonl";
      std::ifstream in(metrics);
      std::stringstream lines;
      lines << in.rdbuf();
      if (lines.str().find("\"kind\":\"step\"") != std::string::npos &&
          lines.str().find("\"kind\":\"end\"") == std::string::npos) {
        job_id = launch.value("job_id", std::string());
      }
    }
  }
  ASSERT_FALSE(job_id.empty()) << "the run never trained in a worker";
  c.terminate();  // SIGKILL: no destructor retires the worker
  c.wait();
  auto state = [&] {
    auto r = RunCapturedCommand({"scontrol", "show", "job", "-o", job_id});
    auto info = r.ok() ? ParseScontrolJob(r->out) : std::nullopt;
    return info ? info->state : std::string("?");
  };
  EXPECT_EQ(state(), "RUNNING");  // orphaned: it would hold its node until the time limit
  ASSERT_EQ(Cli(args), 0) << Err();
  EXPECT_EQ(state(), "CANCELLED");
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE state = 'completed' AND attempt = 2"), 1);
}

TEST_F(SlurmTest, ARunChainsThroughAllocationsOnTheTimeLimitSignalWithTheSameLosses) {
  // The signal Slurm sends before a time limit (--signal=B:USR2@N: SIGUSR2 to the batch shell,
  // which is mpirun) is sent to the running job three times, as three time limits would: each
  // time the run checkpoints and exits 7, and the orchestrator submits a new allocation that
  // resumes it. The run ends with the losses of the same run trained without interruption.
  // A 40 ms straggler sleep per step (timing only) makes each allocation last a few seconds.
  std::string spec = WriteSpec(R"({"name": "slurm-chain", "base": {"batch_size": 64,
      "data": {"name": "fashion-mnist", "samples": 2000, "test_samples": 500},
      "model": {"name": "mlp", "hidden": [32]}, "optimizer": {"name": "adam"},
      "lr": {"base": 0.003}, "budget": {"steps": 120}, "eval": {"every_steps": 25},
      "comm": {"straggler": {"rank": 0, "delay_ms": 40}},
      "checkpoint": {"every_steps": 10, "every_seconds": 0}, "threads": 1},
      "resources": {"retries": 0}, "slurm": {"time_limit_minutes": 5, "signal_seconds": 60}})");
  ASSERT_EQ(Cli({"--db", dir_.path() + "/reference.db", "sweep", "run", spec, "--runs-dir",
                 dir_.path() + "/runs-reference", "--runner", REAL_RUNNER, "--slots", "1"}),
            0)
      << Err();
  bp::child c(BATCHLAB_BIN, bp::args(std::vector<std::string>{
                                "--db", dir_.path() + "/chain.db", "sweep", "run", spec,
                                "--backend", "slurm", "--runs-dir", dir_.path() + "/runs-chain",
                                "--runner", REAL_RUNNER, "--slots", "1"}),
              bp::std_out > bp::null, bp::std_err > dir_.path() + "/err.txt",
              bp::std_in < bp::null);
  std::set<std::string> signalled;  // one signal per attempt folder
  for (int i = 0; i < 900 && signalled.size() < 3 && c.running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    for (const auto& launch : Launches("chain")) {
      const std::string dir = launch.value("attempt_dir", std::string());
      std::ifstream in(dir + "/metrics.jsonl");
      std::stringstream lines;
      lines << in.rdbuf();
      // Well into training in this allocation: past its first checkpoint.
      if (signalled.count(dir) || lines.str().find("\"kind\":\"checkpoint\"") == std::string::npos ||
          lines.str().find("\"kind\":\"end\"") != std::string::npos) {
        continue;
      }
      const std::string job = launch.value("job_id", std::string());
      ASSERT_TRUE(RunCapturedCommand({"scancel", "--batch", "--signal=USR2", job}).ok());
      signalled.insert(dir);
    }
  }
  c.wait();
  ASSERT_EQ(c.exit_code(), 0) << Err();
  EXPECT_EQ(signalled.size(), 3u);
  auto chain = results::OpenReadOnly(dir_.path() + "/chain.db");
  ASSERT_TRUE(chain.ok());
  auto count = [&](const std::string& sql) {
    auto v = (*chain)->QueryInt(sql);
    return v.ok() ? *v : -1;
  };
  EXPECT_EQ(count("SELECT count(*) FROM runs WHERE state = 'completed' AND attempt = 4"), 1);
  EXPECT_EQ(count("SELECT count(*) FROM events WHERE kind = 'preempted'"), 3);
  EXPECT_EQ(count("SELECT count(*) FROM events WHERE kind = 'resume' AND message LIKE "
                  "'resumed from the checkpoint at step %'"),
            3);
  // One continuous run of 120 steps, each once, with the uninterrupted run's losses.
  EXPECT_EQ(count("SELECT count(*) FROM run_metrics WHERE name = 'loss'"), 120);
  EXPECT_EQ(count("SELECT count(DISTINCT step) FROM run_metrics WHERE name = 'loss'"), 120);
  const auto reference = ::batchlab::testing::StoredLosses(dir_.path() + "/reference.db");
  ASSERT_EQ(reference.size(), 120u);
  EXPECT_EQ(Losses("chain"), reference);
}

TEST_F(SlurmTest, MoreNodesThanThePartitionHasIsRefusedBeforeAnythingIsSubmitted) {
  // The test cluster has one node: a 2-node job would pend with PartitionNodeLimit forever. The
  // pre-flight (orchestrator/launch/slurm_preflight.h) asks sinfo and refuses the spec: exit 2, the
  // field named, no job submitted, no run recorded.
  std::string spec = WriteSpec(R"({"name": "slurm-nodes", "base": {"mode": "noop", "batch_size": 64,
      "nodes": 2}, "resources": {"retries": 2}})");
  EXPECT_EQ(Cli(RunArgs(spec)), 2) << Err();
  EXPECT_NE(Err().find("nodes: run "), std::string::npos) << Err();
  EXPECT_NE(Err().find("needs 2 nodes, but partition 'batchlab' has 1"), std::string::npos)
      << Err();
  EXPECT_NE(Err().find("lower `nodes` to at most 1"), std::string::npos) << Err();
  EXPECT_FALSE(fs::exists(Db()));
  // Too many ranks on one node for its CPUs: named too.
  spec = WriteSpec(R"({"name": "slurm-rpn", "base": {"mode": "noop", "batch_size": 64,
      "ranks_per_node": 64}, "resources": {"retries": 2}})");
  EXPECT_EQ(Cli(RunArgs(spec)), 2) << Err();
  EXPECT_NE(Err().find("ranks_per_node: run "), std::string::npos) << Err();
  // A partition that does not exist: slurm.partition named, with the ones that do.
  spec = WriteSpec(R"({"name": "slurm-part", "base": {"mode": "noop", "batch_size": 64},
      "slurm": {"partition": "nosuch"}})");
  EXPECT_EQ(Cli(RunArgs(spec)), 2) << Err();
  EXPECT_NE(Err().find("slurm.partition: no partition 'nosuch'"), std::string::npos) << Err();
  EXPECT_NE(Err().find("sinfo lists: batchlab"), std::string::npos) << Err();
}

TEST_F(SlurmTest, SigintCancelsTheJobsWithScancel) {
  std::string spec =
      WriteSpec(R"({"name": "slurm-cancel", "base": {"mode": "noop", "batch_size": 64},
      "repeats": 2, "launch": {"env": {"FAKE_RUNNER_SECONDS": "120"}}})");
  const std::string err = dir_.path() + "/err.txt";
  std::remove(err.c_str());  // boost.process opens without truncating: no stale tail
  bp::child c(BATCHLAB_BIN, bp::args(RunArgs(spec)), bp::std_out > bp::null, bp::std_err > err,
              bp::std_in < bp::null);
  auto running = [&] {
    if (!fs::exists(Db())) return false;
    auto db = results::OpenReadOnly(Db());
    if (!db.ok()) return false;
    auto n = (*db)->QueryInt("SELECT count(*) FROM ingest_cursors WHERE lines >= 2");
    return n.ok() && *n >= 2;  // both jobs are running and writing metrics
  };
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (!running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(running()) << "jobs never started";
  kill(c.id(), SIGINT);
  c.wait();
  EXPECT_EQ(c.exit_code(), 130);  // 128 + SIGINT, like any stopped sweep
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE state = 'cancelled'"), 2);
  // Slurm agrees: no job of this sweep is left in the queue.
  bool empty = false;
  for (int i = 0; i < 100 && !empty; ++i) {
    auto q = RunCapturedCommand({"squeue", "-h", "-o", "%j"});
    ASSERT_TRUE(q.ok());
    empty = q->out.find("batchlab-") == std::string::npos;
    if (!empty) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_TRUE(empty) << "jobs still queued after cancel";
}

}  // namespace
}  // namespace batchlab::orchestrator
