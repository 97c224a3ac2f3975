// The batchlab-runner executable as the orchestrator sees it: exit codes, stderr messages and
// the metrics file (docs/protocol.md), on the real Fashion-MNIST.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../support/temp_dir.h"  // tests/support (this target has no project include path)

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

class RunnerBinaryTest : public ::testing::Test {
 protected:
  // The quickstart's base configuration (docs/protocol.md fields), 1 rank.
  json Quickstart() const {
    return json::parse(R"({
      "run_id": "00000000000000aa", "sweep": "quickstart", "attempt": 1, "seed": 1,
      "nodes": 1, "ranks_per_node": 1, "world_size": 1, "batch_size": 64, "accumulation": 1,
      "local_batch_size": 64, "micro_batch_size": 64,
      "data": {"name": "fashion-mnist"}, "model": {"name": "mlp", "hidden": [128]},
      "optimizer": {"name": "momentum", "momentum": 0.9, "weight_decay": 0},
      "lr": {"base": 0.05, "base_batch_size": 64, "rule": "none", "warmup_steps": 10,
             "schedule": "constant"},
      "budget": {"epochs": 1}, "eval": {"every_steps": 100, "subset": 0}, "target": null,
      "comm": {"backend": "mpi", "bucket_mb": 25}, "gns": {"every_steps": 1}, "threads": 1,
      "precision": "fp32", "mode": "train"})");
  }

  // Writes `config` (metrics_path set to dir/<name>.jsonl), runs the runner, returns its exit
  // code; stderr goes to err_.
  int Run(json config, const std::string& name, const std::string& extra_args = "") {
    metrics_ = dir_ + "/" + name + ".jsonl";
    if (!config.contains("metrics_path")) config["metrics_path"] = metrics_;
    const std::string config_path = dir_ + "/" + name + ".json";
    std::ofstream(config_path) << config.dump();
    const std::string err_path = dir_ + "/" + name + ".err";
    const std::string cmd = std::string(BATCHLAB_RUNNER_BIN) + " --config " + config_path + " " +
                            extra_args + " 2>" + err_path;
    const int status = std::system(cmd.c_str());
    std::stringstream err;
    err << std::ifstream(err_path).rdbuf();
    err_ = err.str();
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  std::vector<json> Lines() const {
    std::vector<json> lines;
    std::ifstream in(metrics_);
    std::string line;
    while (std::getline(in, line)) lines.push_back(json::parse(line));
    return lines;
  }

  ::batchlab::testing::TempDir temp_;  // removed with its files when the test ends
  std::string dir_ = temp_.path(), metrics_, err_;
};

TEST_F(RunnerBinaryTest, QuickstartBaseConfigReaches80PercentWithAValidMetricsFile) {
  ASSERT_EQ(Run(Quickstart(), "base"), 0) << err_;
  const std::vector<json> lines = Lines();
  ASSERT_GT(lines.size(), 900u);
  for (size_t i = 0; i < lines.size(); ++i) ASSERT_EQ(lines[i]["seq"], i);  // 0, 1, 2, ...
  EXPECT_EQ(lines.front()["kind"], "start");
  EXPECT_EQ(lines.front()["parameters"], 784 * 128 + 128 + 128 * 10 + 10);
  int steps = 0, evals = 0;
  for (const json& l : lines) {
    if (l["kind"] == "step") {
      ++steps;
      EXPECT_EQ(l["step"], steps);
      EXPECT_EQ(l["samples"], steps * 64);
      for (const char* k : {"loss", "lr", "step_seconds", "data_seconds", "compute_seconds",
                            "comm_seconds", "optim_seconds", "gns_sq_small", "gns_sq_big"}) {
        ASSERT_TRUE(l.contains(k) && l[k].is_number()) << k << " in " << l.dump();
      }
      EXPECT_EQ(l["gns_b_small"], 32);  // one rank, no accumulation: two half-batches
      EXPECT_EQ(l["gns_b_big"], 64);
    }
    if (l["kind"] == "eval") ++evals;
  }
  EXPECT_EQ(steps, 60000 / 64);
  EXPECT_EQ(evals, 10);  // every 100 steps, plus the final one at step 937
  // Warmup from 0.05 (rule none: the peak is also 0.05).
  EXPECT_DOUBLE_EQ(lines[1]["lr"].get<double>(), 0.05);
  const json& end = lines.back();
  EXPECT_EQ(end["kind"], "end");
  EXPECT_EQ(end["outcome"], "completed");
  EXPECT_EQ(end["steps"], 937);
  EXPECT_GE(end["final_test_accuracy"].get<double>(), 0.80) << end.dump();
}

TEST_F(RunnerBinaryTest, SameConfigAndSeedGiveTheSameLossCurveAcrossProcesses) {
  json c = Quickstart();
  c["budget"] = {{"steps", 150}};
  c["lr"]["rule"] = "linear";
  c["batch_size"] = 128, c["local_batch_size"] = 128, c["micro_batch_size"] = 64;
  c["accumulation"] = 2;
  auto losses = [&](const std::string& name) {
    EXPECT_EQ(Run(c, name), 0) << err_;
    std::vector<double> out;
    for (const json& l : Lines()) {
      if (l["kind"] == "step") out.push_back(l["loss"].get<double>());
    }
    return out;
  };
  const std::vector<double> a = losses("a"), b = losses("b");
  ASSERT_EQ(a.size(), 150u);
  EXPECT_EQ(a, b);
  EXPECT_DOUBLE_EQ(Lines()[150]["lr"].get<double>(), 0.1);  // linear: 0.05 * 128 / 64
}

TEST_F(RunnerBinaryTest, ConfigErrorsExit2NamingTheJsonPath) {
  json c = Quickstart();
  c["model"]["hiden"] = {64};
  EXPECT_EQ(Run(c, "unknown"), 2);
  EXPECT_NE(err_.find("batchlab-runner[rank 0]: model.hiden: unknown field"), std::string::npos)
      << err_;
  EXPECT_FALSE(fs::exists(metrics_));

  c = Quickstart();
  c["optimizer"]["momentum"] = "0.9";
  EXPECT_EQ(Run(c, "type"), 2);
  EXPECT_NE(err_.find("optimizer.momentum: \"0.9\" is not a number"), std::string::npos) << err_;

  c = Quickstart();
  c["batch_size"] = 100;
  c["accumulation"] = 3;
  c.erase("local_batch_size"), c.erase("micro_batch_size");
  EXPECT_EQ(Run(c, "divisible"), 2);
  EXPECT_NE(err_.find("batch_size: 100 is not divisible"), std::string::npos) << err_;

  c = Quickstart();
  c["optimizer"]["name"] = "adagrad";
  EXPECT_EQ(Run(c, "optimizer", "--validate"), 2);
  EXPECT_NE(err_.find("optimizer.name"), std::string::npos) << err_;
  c = Quickstart();
  c["optimizer"]["momentum"] = 1.5;  // passes the parser; the optimizer factory rejects it
  EXPECT_EQ(Run(c, "momentum", "--validate"), 2);
  EXPECT_NE(err_.find("optimizer.momentum"), std::string::npos) << err_;

  c = Quickstart();  // rejected by the trainer after the data is loaded: still no metrics file
  c["lr"]["schedule"] = "cosine";
  c["budget"] = {{"seconds", 5}};
  EXPECT_EQ(Run(c, "cosine"), 2);
  EXPECT_NE(err_.find("lr.schedule"), std::string::npos) << err_;
  EXPECT_FALSE(fs::exists(metrics_));

  EXPECT_EQ(Run(Quickstart(), "valid", "--validate"), 0) << err_;
  EXPECT_FALSE(fs::exists(metrics_));  // --validate trains and writes nothing
}

// A missing dataset is a bad config (exit 2): no retry would find it (issue 10).
TEST_F(RunnerBinaryTest, MissingDatasetExits2AndLeavesNoFinishedLookingFile) {
  json c = Quickstart();
  c["data"]["path"] = dir_ + "/no-such-folder";
  EXPECT_EQ(Run(c, "missing"), 2);
  EXPECT_NE(err_.find("no-such-folder"), std::string::npos) << err_;
  EXPECT_NE(err_.find("train-images-idx3-ubyte"), std::string::npos) << err_;
  if (fs::exists(metrics_)) {
    for (const json& l : Lines()) EXPECT_NE(l["kind"], "end");
  }
}

// One process judges many configs: every invalid line is reported with its number.
TEST_F(RunnerBinaryTest, ValidateBatchChecksEveryConfigAndTheDataFiles) {
  json fp16 = Quickstart(), no_path = Quickstart(), missing = Quickstart(), csv = Quickstart();
  fp16["precision"] = "fp16";
  no_path["data"] = {{"name", "idx"}};
  missing["data"]["path"] = dir_ + "/no-such-folder";
  csv["data"] = {{"name", "csv"}, {"path", dir_ + "/no.csv"}};
  const std::string lines = dir_ + "/configs.jsonl";
  {
    std::ofstream out(lines);
    for (const json& c : {Quickstart(), fp16, no_path, Quickstart(), missing, csv}) {
      out << c.dump() << "\n";
    }
  }
  const std::string out_path = dir_ + "/batch.out";
  const std::string cmd = std::string(BATCHLAB_RUNNER_BIN) + " --validate-batch " + lines + " >" +
                          out_path + " 2>" + dir_ + "/batch.err";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
  std::vector<json> rejected;
  std::ifstream in(out_path);
  std::string line;
  while (std::getline(in, line)) rejected.push_back(json::parse(line));
  ASSERT_EQ(rejected.size(), 4u);
  EXPECT_EQ(rejected[0]["line"], 2);
  EXPECT_NE(rejected[0]["error"].get<std::string>().find("precision: \"fp16\""), std::string::npos);
  EXPECT_EQ(rejected[1]["line"], 3);
  EXPECT_EQ(rejected[1]["error"].get<std::string>().rfind("data.path:", 0), 0u);
  EXPECT_EQ(rejected[2]["line"], 5);
  EXPECT_NE(rejected[2]["error"].get<std::string>().find("no-such-folder"), std::string::npos);
  EXPECT_EQ(rejected[3]["line"], 6);
  EXPECT_EQ(rejected[3]["error"].get<std::string>().rfind("data.path:", 0), 0u);

  std::ofstream(lines) << Quickstart().dump() << "\n" << Quickstart().dump() << "\n";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  // The single-config --validate checks the data files too.
  EXPECT_EQ(Run(missing, "missing-validate", "--validate"), 2);
  EXPECT_NE(err_.find("data.path"), std::string::npos) << err_;
}

TEST_F(RunnerBinaryTest, TargetReachedExits3AndNoopExits0) {
  json c = Quickstart();
  c["eval"]["every_steps"] = 50;
  c["target"] = {{"metric", "test_accuracy"}, {"op", ">="}, {"value", 0.6}};
  EXPECT_EQ(Run(c, "target"), 3) << err_;
  const json end = Lines().back();
  EXPECT_EQ(end["outcome"], "target_reached");
  EXPECT_EQ(end["target_step"].get<int>() % 50, 0);
  EXPECT_LT(end["target_step"].get<int>(), 937);
  EXPECT_GE(end["final_test_accuracy"].get<double>(), 0.6);

  c = Quickstart();
  c["mode"] = "noop";
  EXPECT_EQ(Run(c, "noop"), 0) << err_;
  const std::vector<json> lines = Lines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["kind"], "start");
  EXPECT_EQ(lines[1]["kind"], "end");
  EXPECT_EQ(lines[1]["seq"], 1);
}

}  // namespace

namespace {

// `c` (global batch 64) on two ranks of 32.
json OnTwoRanks(json c) {
  c["nodes"] = 2;
  c["world_size"] = 2;
  c["local_batch_size"] = 32;
  c["micro_batch_size"] = 32;
  return c;
}

// The metrics file of the 2-rank mpirun fixture (tests/runner/CMakeLists.txt passes its path in
// BATCHLAB_TWO_RANK_METRICS; run alone, without the fixture, the test is skipped).
// The orchestrator's stop file (docs/protocol.md): `stop` beside the config file. Made before
// the start, it is seen at the first check, so the run ends after step 1 on every rank, without a
// final evaluation, with outcome `pruned` and exit 6 — on one rank and on two (the flag travels
// with the gradient allreduce, so both ranks leave after the same step).
TEST_F(RunnerBinaryTest, StopFileEndsTheRunAsPrunedWithExit6OnOneAndTwoRanks) {
  json c = Quickstart();
  c["data"] = {{"name", "synthetic-linear"}};
  c["model"] = {{"name", "logreg"}};
  c["budget"] = {{"steps", 100000000}};  // without the stop file: hours
  c["eval"] = {{"every_steps", 1000}, {"subset", 0}};
  c["target"] = {{"metric", "test_loss"}, {"op", "<="}, {"value", 1e-9}};
  std::ofstream(dir_ + "/stop") << R"({"reason": "pruned"})"
                                << "\n";
  for (const char* launcher :
       {"timeout 120",
        "timeout 120 mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2"}) {
    const bool two = std::string(launcher).find("mpirun") != std::string::npos;
    SCOPED_TRACE(launcher);
    json cfg = two ? OnTwoRanks(c) : c;
    metrics_ = dir_ + (two ? "/two.jsonl" : "/one.jsonl");
    cfg["metrics_path"] = metrics_;
    const std::string config_path = dir_ + (two ? "/two.json" : "/one.json");
    std::ofstream(config_path) << cfg.dump();
    const std::string cmd = std::string(launcher) + " " + BATCHLAB_RUNNER_BIN + " --config " +
                            config_path + " 2>" + dir_ + "/stop.err";
    const int status = std::system(cmd.c_str());
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 6);
    const std::vector<json> lines = Lines();
    ASSERT_GE(lines.size(), 3u);
    EXPECT_EQ(lines.back()["kind"], "end");
    EXPECT_EQ(lines.back()["outcome"], "pruned");
    EXPECT_EQ(lines.back()["steps"], 1);
    for (const json& l : lines) EXPECT_NE(l["kind"], "eval");  // no final evaluation
  }
}

// The orchestrator's prune_at file beside the config (docs/protocol.md): after the first
// evaluation without the target whose bound (step + 1) reaches stop_from_step, every rank ends
// the run after the next step, outcome `pruned`, exit 6. A file that is not such an object is
// ignored (the run goes on to its budget).
TEST_F(RunnerBinaryTest, PruneAtBoundEndsTheRunAfterTheFirstEvaluationPastIt) {
  json c = Quickstart();
  c["data"] = {{"name", "synthetic-linear"}};
  c["model"] = {{"name", "logreg"}};
  c["budget"] = {{"steps", 60}};
  c["eval"] = {{"every_steps", 10}, {"subset", 0}};
  c["target"] = {{"metric", "test_loss"}, {"op", "<="}, {"value", 1e-9}};  // never met
  struct Case {
    const char* launcher;
    const char* prune_at;
    int exit_code;
    const char* outcome;
    int steps;
  };
  const char* two_ranks =
      "timeout 120 mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2";
  for (const Case& k : {Case{"timeout 120", R"({"stop_from_step": 25})", 6, "pruned", 31},
                        Case{two_ranks, R"({"stop_from_step": 25})", 6, "pruned", 31},
                        Case{"timeout 120", R"({"stop_from_step": 21})", 6, "pruned", 21},
                        Case{"timeout 120", "25", 5, "budget_exhausted", 60}}) {
    const bool two = std::string(k.launcher).find("mpirun") != std::string::npos;
    SCOPED_TRACE(std::string(k.launcher) + " " + k.prune_at);
    const std::string dir = dir_ + "/prune-" + std::to_string(k.steps) + (two ? "-two" : "");
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/prune_at") << k.prune_at << "\n";
    json cfg = two ? OnTwoRanks(c) : c;
    metrics_ = dir + "/metrics.jsonl";
    cfg["metrics_path"] = metrics_;
    std::ofstream(dir + "/config.json") << cfg.dump();
    const std::string cmd = std::string(k.launcher) + " " + BATCHLAB_RUNNER_BIN + " --config " +
                            dir + "/config.json 2>" + dir + "/stderr.log";
    const int status = std::system(cmd.c_str());
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), k.exit_code);
    const std::vector<json> lines = Lines();
    ASSERT_GE(lines.size(), 3u);
    EXPECT_EQ(lines.back()["kind"], "end");
    EXPECT_EQ(lines.back()["outcome"], k.outcome);
    EXPECT_EQ(lines.back()["steps"], k.steps);
  }
}

TEST(TwoRankRunTest, MetricsOfTheMpirunRunFollowTheProtocol) {
  const char* path = std::getenv("BATCHLAB_TWO_RANK_METRICS");
  if (path == nullptr) GTEST_SKIP() << "runs as runner_2ranks_mpi_metrics after the mpirun run";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::vector<json> lines;
  std::string line;
  while (std::getline(in, line)) lines.push_back(json::parse(line));
  ASSERT_GE(lines.size(), 3u);
  for (size_t i = 0; i < lines.size(); ++i) ASSERT_EQ(lines[i]["seq"], i);
  EXPECT_EQ(lines.front()["world_size"], 2);
  EXPECT_EQ(lines.front()["local_batch_size"], 64);
  EXPECT_EQ(lines.front()["backend"], "mpi");
  double small = 0, big = 0, comm = 0;
  int steps = 0;
  std::vector<int> eval_steps;
  for (const json& l : lines) {
    if (l["kind"] == "step") {
      ++steps;
      ASSERT_EQ(l["gns_b_small"], 64);  // the local gradient of each rank
      ASSERT_EQ(l["gns_b_big"], 128);   // the allreduced one
      small += l["gns_sq_small"].get<double>();
      big += l["gns_sq_big"].get<double>();
      comm += l["comm_seconds"].get<double>();
    }
    if (l["kind"] == "eval") eval_steps.push_back(l["step"].get<int>());
  }
  EXPECT_EQ(steps, 150);
  EXPECT_EQ(eval_steps, std::vector<int>({50, 100, 150}));
  EXPECT_GT(small, big);  // averaging two local gradients removes noise: E|g_B|^2 falls with B
  EXPECT_GT(comm, 0.0);
  EXPECT_EQ(lines.back()["kind"], "end");
  EXPECT_EQ(lines.back()["outcome"], "completed");
  EXPECT_GT(lines.back()["final_test_accuracy"].get<double>(), 0.6);
}

// Warm workers (runner/train/worker_loop.h): runs handed to a live worker one after another give the
// same metrics, step by step, as cold runs of the same configs, on one rank and on two.
class WarmWorkerTest : public RunnerBinaryTest {
 protected:
  // Starts `launcher batchlab-runner --worker DIR` in the background; its exit code goes to
  // DIR/exit.
  void StartWorker(const std::string& launcher) {
    worker_ = dir_ + "/worker";
    fs::create_directories(worker_);
    const std::string cmd = "(timeout 300 " + launcher + " " + BATCHLAB_RUNNER_BIN + " --worker " +
                            worker_ + " 2>" + worker_ + "/err; echo $? >" + worker_ + "/exit) &";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }
  static bool WaitFor(const std::string& path) {
    for (int i = 0; i < 12000 && !fs::exists(path); ++i) usleep(10000);  // up to 120 s
    return fs::exists(path);
  }
  static std::string Read(const std::string& path) {
    std::stringstream s;
    s << std::ifstream(path).rdbuf();
    return s.str();
  }
  // Hands `config` to the worker as job n in an attempt folder of its own; returns the exit
  // code each rank reported and leaves metrics_ pointing at the run's metrics file.
  std::vector<int> Hand(json config, int n, int ranks) {
    const std::string attempt = dir_ + "/attempt-" + std::to_string(n);
    fs::create_directories(attempt);
    metrics_ = attempt + "/metrics.jsonl";
    config["metrics_path"] = metrics_;
    std::ofstream(attempt + "/config.json") << config.dump();
    const std::string job = worker_ + "/job-" + std::to_string(n) + ".json";
    std::ofstream(job + ".tmp") << json{{"config", attempt + "/config.json"}}.dump();
    fs::rename(job + ".tmp", job);
    std::vector<int> codes;
    for (int r = 0; r < ranks; ++r) {
      const std::string done = worker_ + "/done-" + std::to_string(n) + ".rank" + std::to_string(r);
      if (!WaitFor(done)) return {};
      codes.push_back(std::stoi(Read(done)));
    }
    return codes;
  }
  std::vector<double> Losses() const {
    std::vector<double> out;
    for (const json& l : Lines()) {
      if (l["kind"] == "step") out.push_back(l["loss"].get<double>());
    }
    return out;
  }
  int Quit() {
    std::ofstream(worker_ + "/quit").close();
    if (!WaitFor(worker_ + "/exit")) return -1;
    return std::stoi(Read(worker_ + "/exit"));
  }
  std::string worker_;
};

TEST_F(WarmWorkerTest, OneRankWarmRunsMatchColdRunsStepByStep) {
  json c = Quickstart();
  c["data"]["samples"] = 4000;
  c["budget"] = {{"steps", 40}};
  c["eval"] = {{"every_steps", 20}, {"subset", 500}};
  json other = c;
  other["seed"] = 2;
  other["model"]["hidden"] = {32};
  ASSERT_EQ(Run(c, "cold"), 0) << err_;
  const std::vector<double> cold = Losses();
  ASSERT_EQ(cold.size(), 40u);
  const json cold_end = Lines().back();

  StartWorker("");
  EXPECT_EQ(Hand(c, 1, 1), std::vector<int>{0});
  EXPECT_EQ(Losses(), cold);
  EXPECT_EQ(Hand(other, 2, 1), std::vector<int>{0});  // another model and seed in between
  EXPECT_NE(Losses(), cold);
  EXPECT_EQ(Hand(c, 3, 1), std::vector<int>{0});
  EXPECT_EQ(Losses(), cold);
  EXPECT_EQ(Lines().back()["final_test_loss"], cold_end["final_test_loss"]);
  EXPECT_EQ(Lines().back()["final_test_accuracy"], cold_end["final_test_accuracy"]);
  // The run's own stderr went to its attempt folder, not to the worker's.
  EXPECT_TRUE(fs::exists(dir_ + "/attempt-3/stderr.log"));
  EXPECT_EQ(Quit(), 0) << Read(worker_ + "/err");
}

TEST_F(WarmWorkerTest, TwoRankWarmRunsMatchAColdRunAndAFailureEndsTheWorker) {
  json c = Quickstart();
  c["data"] = {{"name", "synthetic-linear"}};
  c["model"] = {{"name", "logreg"}};
  c["nodes"] = 2, c["world_size"] = 2, c["local_batch_size"] = 32, c["micro_batch_size"] = 32;
  c["budget"] = {{"steps", 30}};
  c["eval"] = {{"every_steps", 10}, {"subset", 0}};
  const std::string mpirun = "mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2";
  metrics_ = dir_ + "/cold2.jsonl";
  c["metrics_path"] = metrics_;
  std::ofstream(dir_ + "/cold2.json") << c.dump();
  ASSERT_EQ(std::system(("timeout 120 " + mpirun + " " + BATCHLAB_RUNNER_BIN + " --config " + dir_ +
                         "/cold2.json 2>" + dir_ + "/cold2.err")
                            .c_str()),
            0);
  const std::vector<double> cold = Losses();
  ASSERT_EQ(cold.size(), 30u);

  StartWorker(mpirun);
  EXPECT_EQ(Hand(c, 1, 2), std::vector<int>({0, 0}));
  EXPECT_EQ(Losses(), cold);
  EXPECT_EQ(Hand(c, 2, 2), std::vector<int>({0, 0}));
  EXPECT_EQ(Losses(), cold);
  // A run that fails (its data file is missing: exit 2) is reported and ends the worker.
  json bad = c;
  bad["data"] = {{"name", "idx"}, {"path", dir_ + "/nowhere"}};
  const std::vector<int> codes = Hand(bad, 3, 1);
  EXPECT_EQ(codes, std::vector<int>{2});
  ASSERT_TRUE(WaitFor(worker_ + "/exit"));
  EXPECT_NE(Read(worker_ + "/exit"), "0\n");
  EXPECT_NE(Read(dir_ + "/attempt-3/stderr.log").find("data.path"), std::string::npos);
}

}  // namespace
