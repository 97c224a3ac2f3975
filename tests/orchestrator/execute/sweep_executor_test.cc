// The sweep executor in-process, as ninja tests its builder with a fake command runner: a fake
// Launcher whose Jobs follow a script on a fake clock (no processes, no real sleeps), and a real
// SQLite store in a temporary folder. Retry with exponential backoff, timeout escalation
// (SIGTERM, then SIGKILL after the grace period), cancel, resume of an attempt left running by a
// killed orchestrator, the end line's outcome winning over a hang after it, and attempt folders
// that are never reused.
#include "orchestrator/execute/sweep_executor.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/run_protocol.h"
#include "orchestrator/spec/expansion.h"
#include "orchestrator/spec/spec.h"
#include "results/schema.h"
#include "results/store.h"
#include "tests/support/temp_dir.h"

namespace batchlab::orchestrator {
namespace {

using testing::TempDir;

// What one attempt does, in fake seconds from its start.
struct Script {
  double seconds = 1;           // exits (or writes its end line, if it hangs after it) then
  int exit_code = 0;            // 0, 3, 4, 5 write an end line first
  bool hang = false;            // never exits by itself (a timeout or a stop must end it)
  bool hang_after_end = false;  // writes the end line at `seconds`, then never exits
  bool ignore_term = false;     // SIGTERM does nothing; only Kill ends it
};

Script Exits(double seconds, int exit_code) {
  Script s;
  s.seconds = seconds;
  s.exit_code = exit_code;
  return s;
}

// Writes its end line (exit code `exit_code`'s outcome) at `seconds`, then never exits.
Script HangsAfterEnd(double seconds, int exit_code, bool ignore_term) {
  Script s = Exits(seconds, exit_code);
  s.hang_after_end = true;
  s.ignore_term = ignore_term;
  return s;
}

struct Clock {
  double t = 0;
};

class FakeJob final : public Job {
 public:
  FakeJob(Clock& clock, Script script, std::string dir)
      : clock_(clock), script_(script), dir_(std::move(dir)), start_(clock.t) {
    Append(R"({"seq":0,"kind":"start","host":"fake"})");
  }

  JobStatus Poll() override {
    JobStatus s;
    if (killed_) return Ended(s, std::nullopt, 9);
    if (terminated_ && !script_.ignore_term) return Ended(s, std::nullopt, 15);
    if (clock_.t - start_ < script_.seconds || script_.hang) return s;
    if (!wrote_) {
      wrote_ = true;
      Append(R"({"seq":1,"kind":"step","step":1,"loss":0.5})");
      const char* outcome = script_.exit_code == 0   ? "completed"
                            : script_.exit_code == 3 ? "target_reached"
                            : script_.exit_code == 4 ? "diverged"
                            : script_.exit_code == 5 ? "budget_exhausted"
                                                     : nullptr;
      if (outcome != nullptr) {
        Append(fmt::format(R"({{"seq":2,"kind":"end","outcome":"{}","steps":1}})", outcome));
      }
    }
    if (script_.hang_after_end) return s;
    return Ended(s, script_.exit_code, std::nullopt);
  }
  void Terminate() override { terminated_ = true; }
  void Kill() override { killed_ = true; }

 private:
  JobStatus Ended(JobStatus s, std::optional<int> code, std::optional<int> signal) {
    s.done = true;
    s.exit_code = code;
    s.signal = signal;
    return s;
  }
  void Append(const std::string& line) {
    std::ofstream(dir_ + "/metrics.jsonl", std::ios::app) << line << "\n";
  }

  Clock& clock_;
  Script script_;
  std::string dir_;
  double start_;
  bool wrote_ = false, terminated_ = false, killed_ = false;
};

// Records every call with the fake time it happened at.
class FakeLauncher final : public Launcher {
 public:
  struct Call {
    std::string what;  // "start", "terminate", "kill"
    std::string run_id;
    int attempt = 0;
    double t = 0;
    std::string dir;
    std::vector<int> gpu_ids = {};  // "start": the GPUs the request holds
  };

  explicit FakeLauncher(Clock& clock) : clock_(clock) {}
  const char* name() const override { return "fake"; }

  StatusOr<std::unique_ptr<Job>> Start(const LaunchRequest& r) override {
    calls.push_back({"start", r.run_id, r.attempt, clock_.t, r.attempt_dir, r.gpu_ids});
    gpus_per_rank.push_back(r.gpus_per_rank);
    // A GPU is never handed to two jobs that have not ended.
    for (int id : r.gpu_ids) {
      EXPECT_EQ(gpu_holder.count(id), 0u) << "GPU " << id << " handed to " << r.run_id << " while "
                                          << gpu_holder[id] << " holds it";
      gpu_holder[id] = r.run_id;
    }
    Script s = script ? script(r) : Script{};
    auto job = std::make_unique<RecordingJob>(*this, r, FakeJob(clock_, s, r.attempt_dir));
    return std::unique_ptr<Job>(std::move(job));
  }
  void CleanUpStale(const std::string& attempt_dir) override { cleaned.push_back(attempt_dir); }

  std::vector<Call> Of(const std::string& what) const {
    std::vector<Call> out;
    for (const Call& c : calls) {
      if (c.what == what) out.push_back(c);
    }
    return out;
  }

  std::function<Script(const LaunchRequest&)> script;
  std::vector<Call> calls;
  std::vector<std::string> cleaned;
  std::map<int, std::string> gpu_holder;  // GPU id -> run of a job that has not ended
  std::vector<int> gpus_per_rank;         // of every request

 private:
  class RecordingJob final : public Job {
   public:
    RecordingJob(FakeLauncher& l, LaunchRequest r, FakeJob job)
        : l_(l), r_(std::move(r)), job_(std::move(job)) {}
    JobStatus Poll() override {
      JobStatus st = job_.Poll();
      if (st.done && !ended_) {
        ended_ = true;
        for (int id : r_.gpu_ids) l_.gpu_holder.erase(id);
      }
      return st;
    }
    void Terminate() override {
      if (!terminated_) l_.calls.push_back({"terminate", r_.run_id, r_.attempt, l_.clock_.t, ""});
      terminated_ = true;
      job_.Terminate();
    }
    void Kill() override {
      if (!killed_) l_.calls.push_back({"kill", r_.run_id, r_.attempt, l_.clock_.t, ""});
      killed_ = true;
      job_.Kill();
    }

   private:
    FakeLauncher& l_;
    LaunchRequest r_;
    FakeJob job_;
    bool terminated_ = false, killed_ = false, ended_ = false;
  };

  Clock& clock_;
};

class SweepExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = results::Store::Open(dir_.File("batchlab.db"));
    ASSERT_TRUE(store.ok()) << store.status().message();
    store_ = std::move(*store);
    options_.slots = 1;
    options_.runs_dir = dir_.File("runs");
    options_.poll_seconds = 0.5;
    options_.ingest_every_seconds = 1;
    options_.terminate_grace_seconds = 10;
    options_.clock.now = [this] { return clock_.t; };
    options_.clock.sleep = [this](double s) {
      clock_.t += s;
      ASSERT_LT(clock_.t, 100000) << "the executor never ended";
    };
  }

  // A spec of `batch_sizes.size()` runs with the given resources.
  void Load(const std::string& resources, const std::string& batch_sizes = "[64]") {
    auto spec = ParseSpec(fmt::format(R"({{"name": "s", "base": {{"mode": "noop"}},
        "axes": {{"batch_size": {}}}, "resources": {}}})",
                                      batch_sizes, resources),
                          "test");
    ASSERT_TRUE(spec.ok()) << spec.status().message();
    spec_ = std::move(*spec);
    auto plan = ExpandSpec(spec_, {});
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    plan_ = std::move(*plan);
  }

  SweepOutcome Execute() {
    auto out = ExecuteSweep(spec_, plan_, *store_, launcher_, options_);
    EXPECT_TRUE(out.ok()) << out.status().message();
    return out.ok() ? *out : SweepOutcome{};
  }

  int64_t Query(const std::string& sql) {
    auto db = results::OpenReadOnly(dir_.File("batchlab.db"));
    EXPECT_TRUE(db.ok()) << db.status().message();
    auto v = (*db)->QueryInt(sql);
    EXPECT_TRUE(v.ok()) << sql << ": " << v.status().message();
    return v.ok() ? *v : -1;
  }

  TempDir dir_;
  Clock clock_;
  FakeLauncher launcher_{clock_};
  std::unique_ptr<results::Store> store_;
  ExecutorOptions options_;
  Spec spec_;
  Plan plan_;
};

TEST_F(SweepExecutorTest, RetriesWithExponentialBackoffInNewFolders) {
  Load(R"({"retries": 2, "retry_backoff_seconds": 5})");
  launcher_.script = [](const LaunchRequest& r) { return Exits(1, r.attempt < 3 ? 1 : 0); };
  SweepOutcome out = Execute();
  EXPECT_EQ(out.succeeded, 1);
  EXPECT_EQ(out.attempts, 3);
  auto starts = launcher_.Of("start");
  ASSERT_EQ(starts.size(), 3u);
  // Attempt 1 fails at t=1: attempt 2 waits 5 s; it fails 1 s later: attempt 3 waits 10 s.
  EXPECT_NEAR(starts[1].t - starts[0].t, 1 + 5, 1.0);
  EXPECT_NEAR(starts[2].t - starts[1].t, 1 + 10, 1.0);
  EXPECT_NE(starts[0].dir, starts[1].dir);
  EXPECT_NE(starts[1].dir, starts[2].dir);
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE state = 'completed' AND attempt = 3"), 1);
  EXPECT_EQ(Query("SELECT count(*) FROM events WHERE kind = 'retry'"), 2);
  EXPECT_EQ(Query("SELECT count(DISTINCT dir) FROM attempts"), 3);
}

TEST_F(SweepExecutorTest, TimeoutSendsTermThenKillAfterTheGracePeriod) {
  Load(R"({"retries": 0, "timeout_seconds": 30})");
  launcher_.script = [](const LaunchRequest&) {
    Script s;
    s.hang = true;
    s.ignore_term = true;
    return s;
  };
  SweepOutcome out = Execute();
  EXPECT_EQ(out.failed, 1);
  auto term = launcher_.Of("terminate"), kill = launcher_.Of("kill");
  ASSERT_EQ(term.size(), 1u);
  ASSERT_EQ(kill.size(), 1u);
  EXPECT_NEAR(term[0].t, 30, 1.0);
  EXPECT_NEAR(kill[0].t, 30 + 10, 1.0);
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE state = 'timed_out'"), 1);
}

TEST_F(SweepExecutorTest, StopTerminatesRunningRunsAndLeavesWaitingOnesPending) {
  Load(R"({"retries": 3})", "[64, 128]");
  launcher_.script = [](const LaunchRequest&) { return Exits(1000, 0); };
  options_.stop_requested = [this] { return clock_.t >= 5; };
  SweepOutcome out = Execute();
  EXPECT_TRUE(out.stopped);
  EXPECT_EQ(out.cancelled, 1);
  ASSERT_EQ(launcher_.Of("start").size(), 1u);  // one slot: the second run never started
  ASSERT_EQ(launcher_.Of("terminate").size(), 1u);
  EXPECT_NEAR(launcher_.Of("terminate")[0].t, 5, 1.0);
  EXPECT_TRUE(launcher_.Of("kill").empty());  // it stopped on SIGTERM
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE state = 'cancelled'"), 1);
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE state = 'pending'"), 1);
  EXPECT_EQ(Query("SELECT count(*) FROM events WHERE kind = 'retry'"), 0);
}

// A run whose config two versions share stays a run of the first (docs/spec.md, "Run identity
// and spec versions"): the new version does not run it, and counts it as skipped (already
// finished) only when it finished there. Before the fix a never-run run of version 1 was counted
// as finished.
TEST_F(SweepExecutorTest, NewVersionCountsAnEarlierVersionsRunAsFinishedOnlyIfItFinished) {
  Load("{}", "[32, 64]");
  ASSERT_EQ(Execute().succeeded, 2);
  // B=128 joins version 1 (more axis values extend it) but a stop at once leaves it never run.
  Load("{}", "[32, 64, 128]");
  options_.stop_requested = [] { return true; };
  SweepOutcome extended = Execute();
  EXPECT_EQ(extended.version, 1);
  EXPECT_EQ(extended.attempts, 0);
  options_.stop_requested = nullptr;
  // Dropping B=32 changes the spec: version 2, whose B=64 and B=128 are version 1's runs.
  Load("{}", "[64, 128, 256]");
  options_.new_version = true;
  SweepOutcome v2 = Execute();
  EXPECT_EQ(v2.version, 2);
  EXPECT_EQ(v2.skipped, 1);             // B=64, completed in version 1
  EXPECT_EQ(v2.earlier_unfinished, 1);  // B=128, never run in version 1: not run, not finished
  EXPECT_EQ(v2.succeeded, 1);           // B=256
  EXPECT_EQ(v2.attempts, 1);
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE batch_size = 128 AND attempt = 0 AND state "
                  "NOT IN ('completed', 'target_reached', 'budget_exhausted')"),
            1);
}

// A run that wrote its end line and then hangs: before the fix it was recorded timed_out (its
// outcome said completed) and retried.
TEST_F(SweepExecutorTest, EndLineOutcomeWinsOverAHangAfterIt) {
  Load(R"({"retries": 2, "timeout_seconds": 5})");
  // The end line at 2 s, then a hang that ignores SIGTERM: timed out at 5 s, killed at 15 s.
  launcher_.script = [](const LaunchRequest&) { return HangsAfterEnd(2, 3, true); };
  SweepOutcome out = Execute();
  EXPECT_EQ(out.succeeded, 1);
  EXPECT_EQ(out.failed, 0);
  EXPECT_EQ(out.attempts, 1);  // not retried
  ASSERT_EQ(launcher_.Of("kill").size(), 1u);
  EXPECT_NEAR(launcher_.Of("kill")[0].t, 5 + 10, 1.0);
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE state = 'target_reached' AND attempt = 1 AND "
                  "outcome = 'target_reached'"),
            1);
  EXPECT_EQ(Query("SELECT count(*) FROM events WHERE kind = 'retry'"), 0);
  EXPECT_EQ(Query("SELECT count(*) FROM events WHERE to_state = 'target_reached' AND message "
                  "LIKE '%timed out after its end line%'"),
            1);
}

TEST_F(SweepExecutorTest, EndLineWithoutTimeoutIsStoppedAfterTheGracePeriod) {
  Load(R"({"retries": 1})");
  launcher_.script = [](const LaunchRequest&) { return HangsAfterEnd(2, 0, false); };
  SweepOutcome out = Execute();
  EXPECT_EQ(out.succeeded, 1);
  ASSERT_EQ(launcher_.Of("terminate").size(), 1u);
  // Seen by the ingest after t=2 (every 1 s), stopped 10 s later.
  EXPECT_NEAR(launcher_.Of("terminate")[0].t, 2 + 10, 1.5);
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE state = 'completed' AND attempt = 1"), 1);
}

// A killed orchestrator left two runs `running`, their folders under another --runs-dir: one had
// written its end line (kept), one had not (its tail is ingested under attempt 1, it runs again).
TEST_F(SweepExecutorTest, ResumeStopsTheStaleAttemptAndIngestsItsTail) {
  Load(R"({"retries": 0})", "[64, 128]");
  auto sweep = store_->CreateSweep(spec_.name, spec_.canonical.dump(), spec_.spec_hash);
  ASSERT_TRUE(sweep.ok());
  std::vector<std::string> old_dirs;
  for (size_t i = 0; i < plan_.runs.size(); ++i) {
    const PlannedRun& r = plan_.runs[i];
    results::RunRecord rec;
    rec.id = r.id;
    rec.sweep_id = sweep->id;
    rec.ordinal = r.ordinal;
    rec.config_json = r.config.dump();
    rec.params = r.params;
    ASSERT_TRUE(store_->AddRun(rec).ok());
    const std::string dir = dir_.File(fmt::format("old-runs/{}", i));
    std::filesystem::create_directories(dir);
    ASSERT_TRUE(store_->StartAttempt(r.id, dir).ok());
    std::string text =
        "{\"seq\":0,\"kind\":\"start\"}\n{\"seq\":1,\"kind\":\"step\",\"step\":1,"
        "\"loss\":0.9}\n";
    if (i == 0)
      text += "{\"seq\":2,\"kind\":\"end\",\"outcome\":\"completed\",\"steps\":1}\n";
    else
      text += "{\"seq\":2,\"kind\":\"step\",\"ste";  // cut off mid-line by the kill
    std::ofstream(dir + "/metrics.jsonl") << text;
    old_dirs.push_back(dir);
  }
  SweepOutcome out = Execute();
  EXPECT_EQ(out.interrupted, 1);
  EXPECT_EQ(out.skipped, 1);
  EXPECT_EQ(launcher_.cleaned, old_dirs);  // the recorded folders, not --runs-dir
  ASSERT_EQ(launcher_.Of("start").size(), 1u);
  EXPECT_EQ(launcher_.Of("start")[0].run_id, plan_.runs[1].id);
  EXPECT_EQ(launcher_.Of("start")[0].attempt, 2);
  EXPECT_EQ(launcher_.Of("start")[0].dir.rfind(options_.runs_dir, 0), 0u);
  EXPECT_EQ(Query(fmt::format("SELECT count(*) FROM runs WHERE id = '{}' AND attempt = 1 AND "
                              "state = 'completed'",
                              plan_.runs[0].id)),
            1);
  // The interrupted attempt's tail: its step line and the truncated last line (an event).
  EXPECT_EQ(Query("SELECT count(*) FROM metrics WHERE attempt = 1 AND seq = 1"), 2);
  EXPECT_EQ(Query("SELECT count(*) FROM events WHERE kind = 'truncated_line' AND attempt = 1"), 1);
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE state = 'completed'"), 2);
}

// An LR search adds a round once the one before is done; a second call re-derives the rounds from
// the database and starts nothing. A round's run found running (left by a killed orchestrator) is
// taken up like a run of the plan: its recorded folder is cleaned up and its metrics ingested.
TEST_F(SweepExecutorTest, LrSearchRoundsRunOnceAndResumeLikeThePlan) {
  auto spec = ParseSpec(R"({"name": "s", "base": {"mode": "noop", "batch_size": 64,
      "target": {"metric": "loss", "op": "<=", "value": 1}},
      "lr_search": {"min": 0.01, "max": 1, "grid": 3, "rounds": 1},
      "resources": {"retries": 0}})",
                        "test");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  spec_ = std::move(*spec);
  auto plan = ExpandSpec(spec_, {});
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  plan_ = std::move(*plan);
  ASSERT_EQ(plan_.runs.size(), 3u);  // the coarse grid
  launcher_.script = [](const LaunchRequest&) { return Exits(1, 3); };  // loss 0.5 at step 1
  SweepOutcome first = Execute();
  EXPECT_EQ(first.search_rounds, 1);
  EXPECT_GT(first.total, 3);
  EXPECT_EQ(first.succeeded, first.total);
  const size_t starts = launcher_.Of("start").size();
  EXPECT_EQ(starts, static_cast<size_t>(first.total));
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE state = 'target_reached'"), first.total);

  SweepOutcome again = Execute();
  EXPECT_EQ(again.total, first.total);
  EXPECT_EQ(again.skipped, first.total);
  EXPECT_EQ(launcher_.Of("start").size(), starts);

  // The last round's run, as a killed orchestrator would have left it.
  const std::string last = launcher_.Of("start").back().run_id;
  {
    auto db = results::OpenForWriting(dir_.File("batchlab.db"));
    ASSERT_TRUE(db.ok()) << db.status().message();
    ASSERT_TRUE(
        (*db)->Exec(fmt::format("UPDATE runs SET state = 'running' WHERE id = '{}'", last)).ok());
  }
  SweepOutcome resumed = Execute();
  EXPECT_EQ(resumed.total, first.total);
  ASSERT_EQ(launcher_.cleaned.size(), 1u);
  EXPECT_EQ(launcher_.cleaned[0], launcher_.Of("start")[starts - 1].dir);
  EXPECT_EQ(Query(fmt::format(
                "SELECT count(*) FROM runs WHERE id = '{}' AND state = 'target_reached'", last)),
            1);
}

TEST_F(SweepExecutorTest, NewAttemptNeverReusesAnExistingFolder) {
  Load(R"({"retries": 0})");
  const std::string taken = protocol::AttemptDir(
      std::filesystem::absolute(options_.runs_dir).string(), "s", plan_.runs[0].id, 1,
      store_->database_id());
  std::filesystem::create_directories(taken);
  std::ofstream(taken + "/metrics.jsonl") << "left by a crash before the attempt was recorded\n";
  SweepOutcome out = Execute();
  EXPECT_EQ(out.succeeded, 1);
  ASSERT_EQ(launcher_.Of("start").size(), 1u);
  EXPECT_EQ(launcher_.Of("start")[0].dir, taken + "-2");
  std::ifstream in(taken + "/metrics.jsonl");
  std::string kept;
  std::getline(in, kept);
  EXPECT_EQ(kept, "left by a crash before the attempt was recorded");
  EXPECT_EQ(Query("SELECT count(*) FROM attempts WHERE dir LIKE '%-2'"), 1);
}

// GPU slots (gpu_slots.h): with 4 free slots but 2 GPUs, only two 1-GPU runs run at once; the
// third starts when a GPU is given back, and gets the lowest free id.
TEST_F(SweepExecutorTest, GpuRunWaitsForAFreeGpuAndGetsItsIds) {
  Load(R"({"gpus_per_rank": 1, "expected_seconds": 10})", "[64, 128, 256]");
  options_.slots = 4;
  options_.gpus = 2;
  launcher_.script = [](const LaunchRequest&) { return Exits(5, 0); };
  SweepOutcome out = Execute();
  EXPECT_EQ(out.succeeded, 3);
  auto starts = launcher_.Of("start");
  ASSERT_EQ(starts.size(), 3u);
  EXPECT_EQ(starts[0].gpu_ids, std::vector<int>({0}));
  EXPECT_EQ(starts[1].gpu_ids, std::vector<int>({1}));
  EXPECT_NEAR(starts[1].t, starts[0].t, 0.01);     // together: two GPUs
  EXPECT_NEAR(starts[2].t - starts[0].t, 5, 1.0);  // waited for a GPU though slots were free
  EXPECT_EQ(starts[2].gpu_ids.size(), 1u);
  EXPECT_TRUE(launcher_.gpu_holder.empty());  // every GPU given back
  for (int g : launcher_.gpus_per_rank) EXPECT_EQ(g, 1);
  // The observed lower bound counts GPU-seconds: 3 x 5 s on 2 GPUs, above 5 s and 15 / 4 slots.
  EXPECT_NEAR(out.busy_gpu_seconds, 15, 1.5);
  EXPECT_NEAR(out.lower_bound_seconds, 7.5, 1.0);
}

// A run that fails gives its GPUs back before its retry, which gets GPUs again; no id is ever
// held twice (FakeLauncher checks every start).
TEST_F(SweepExecutorTest, FailedRunGivesItsGpusBackAndItsRetryGetsThemAgain) {
  Load(R"({"gpus_per_rank": 2, "retries": 2, "retry_backoff_seconds": 1})", "[64, 128]");
  options_.slots = 8;
  options_.gpus = 3;  // room for one 2-GPU run at a time
  launcher_.script = [](const LaunchRequest& r) { return Exits(2, r.attempt == 1 ? 1 : 0); };
  SweepOutcome out = Execute();
  EXPECT_EQ(out.succeeded, 2);
  EXPECT_EQ(out.attempts, 4);
  auto starts = launcher_.Of("start");
  ASSERT_EQ(starts.size(), 4u);
  for (const auto& c : starts) EXPECT_EQ(c.gpu_ids, std::vector<int>({0, 1})) << c.run_id;
  EXPECT_TRUE(launcher_.gpu_holder.empty());
}

// A plan whose run needs more GPUs than the pool (here none) is refused before anything starts.
TEST_F(SweepExecutorTest, RunNeedingMoreGpusThanThePoolIsRefusedBeforeAnyStart) {
  Load(R"({"gpus_per_rank": 1})");
  options_.gpus = 0;
  auto out = ExecuteSweep(spec_, plan_, *store_, launcher_, options_);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("resources.gpus_per_rank"), std::string::npos)
      << out.status().message();
  EXPECT_NE(out.status().message().find("--gpus"), std::string::npos) << out.status().message();
  EXPECT_TRUE(launcher_.calls.empty());
}

// GPUs not counted (-1: Slurm allocates them): runs start on slots alone, with no ids, and the
// request still carries gpus_per_rank for the backend.
TEST_F(SweepExecutorTest, UncountedGpusStartOnSlotsAlone) {
  Load(R"({"gpus_per_rank": 4})", "[64, 128]");
  options_.slots = 2;
  options_.gpus = -1;
  SweepOutcome out = Execute();
  EXPECT_EQ(out.succeeded, 2);
  auto starts = launcher_.Of("start");
  ASSERT_EQ(starts.size(), 2u);
  EXPECT_NEAR(starts[1].t, starts[0].t, 0.01);
  for (const auto& c : starts) EXPECT_TRUE(c.gpu_ids.empty());
  for (int g : launcher_.gpus_per_rank) EXPECT_EQ(g, 4);
}

}  // namespace
}  // namespace batchlab::orchestrator
