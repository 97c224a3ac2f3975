// Strict config parsing from the one declaration (base/config_fields.cc): the runner reads exactly
// the declared fields, every one reaches RunConfig, absent ones take the declared defaults; every
// error names its JSON path; derived sizes are checked or filled.
#include "runner/config/run_config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>

#include "base/config_fields.h"
#include "runner/config/runner_error.h"
#include "tests/runner/config/config_error_of.h"

namespace batchlab::runner {
namespace {

using nlohmann::json;

json Minimal() { return json::parse(R"({"batch_size": 64, "budget": {"epochs": 1}})"); }

// The value at a dotted path (nullptr if absent).
const json* At(const json& j, const std::string& path) {
  std::string pointer = "/" + path;
  std::replace(pointer.begin(), pointer.end(), '.', '/');
  const json::json_pointer p(pointer);
  return j.contains(p) ? &j.at(p) : nullptr;
}

// A consistent config that gives every field the runner reads a value other than its declared
// default (each a different value, so two fields landing in one member would show).
json EveryFieldSet() {
  return json::parse(R"({
    "run_id": "r1", "sweep": "s1", "attempt": 2, "seed": 9, "world_size": 4,
    "local_batch_size": 16, "micro_batch_size": 8, "metrics_path": "/tmp/m.jsonl",
    "nodes": 2, "ranks_per_node": 2, "batch_size": 64, "accumulation": 2,
    "data": {"name": "csv", "path": "/tmp/train.csv", "test_path": "/tmp/test.csv",
             "label_column": 3, "task": "regression", "samples": 100, "test_samples": 50,
             "features": 8, "noise": 0.5, "seed": 77},
    "model": {"name": "cnn", "hidden": [64], "channels": [8, 24], "bias": false},
    "optimizer": {"name": "lars", "momentum": 0.8, "weight_decay": 0.0001, "beta1": 0.85,
                  "beta2": 0.95, "eps": 1e-6, "trust_coefficient": 0.02,
                  "exclude_bias_and_norm": false},
    "lr": {"base": 0.3, "base_batch_size": 128, "rule": "linear", "warmup_steps": 5,
           "warmup_epochs": 0.5, "warmup_start_fraction": 0.125, "schedule": "step",
           "milestones": [10, 20], "gamma": 0.5, "power": 2.0, "final_lr_fraction": 0.25},
    "budget": {"epochs": 2.5, "steps": 100, "samples": 6400, "seconds": 60.5},
    "eval": {"every_steps": 10, "subset": 500},
    "target": {"metric": "test_loss", "op": "<=", "value": 0.3},
    "comm": {"backend": "gloo", "bucket_mb": 4.5, "rendezvous": "/tmp/rdv", "timeout_seconds": 60,
             "sync": "local_sgd", "sync_every": 8, "backup_workers": 2,
             "straggler": {"rank": 3, "delay_ms": 5, "probability": 0.5}},
    "gns": {"every_steps": 5},
    "checkpoint": {"every_steps": 7, "every_samples": 640, "every_seconds": 30.5, "keep": 3,
                   "at_steps": [5, 9]},
    "branch": {"trunk_run_id": "00000000000000aa", "at_step": 3, "at_samples": 384,
               "trunk_batch_size": 128, "multiplier": 2.5},
    "divergence_factor": 4.0, "threads": 3, "precision": "bf16",
    "mode": "noop"})");
}

// The declared fields below the root that hold a value (not objects), but the orchestrator's
// `program` (which program to launch) and the user's own `params`.
std::vector<std::string> DeclaredFieldsForTheRunner() {
  std::vector<std::string> out;
  for (const config::Field* f : config::AllFields()) {
    if (f->IsObject() || f->type == config::Type::kAnyObject) continue;
    if (f->path.rfind("program.", 0) == 0) continue;
    out.push_back(f->path);
  }
  return out;
}

TEST(RunConfigDeclarationTest, ReadsExactlyTheDeclaredFields) {
  EXPECT_EQ(RunConfigFieldsRead(), DeclaredFieldsForTheRunner())
      << "runner/config/run_config.cc's bindings and base/config_fields.cc's declaration differ";
}

TEST(RunConfigDeclarationTest, EveryDeclaredFieldReachesRunConfig) {
  const json given = EveryFieldSet();
  const RunConfig c = ParseRunConfig(given, 4);
  const json parsed = RunConfigToJson(c);
  // A batch schedule needs comm.sync allreduce (EveryFieldSet's is local_sgd): its fields are
  // checked on a copy that has one.
  json scheduled = EveryFieldSet();
  scheduled["comm"]["sync"] = "allreduce";
  scheduled["batch_schedule"] = {{"at_samples", {640, 1280}}, {"batch_sizes", {128, 256}}};
  const json scheduled_parsed = RunConfigToJson(ParseRunConfig(scheduled, 4));
  for (const std::string& path : RunConfigFieldsRead()) {
    SCOPED_TRACE(path);
    const bool schedule_field = path.rfind("batch_schedule.", 0) == 0;
    const json* want = At(schedule_field ? scheduled : given, path);
    ASSERT_NE(want, nullptr) << "EveryFieldSet() must set every field the runner reads";
    const config::Field* f = config::FindField(path);
    ASSERT_NE(f, nullptr);
    if (f->default_value.has_value()) {
      EXPECT_NE(*want, *f->default_value) << "not a non-default";
    }
    const json* got = At(schedule_field ? scheduled_parsed : parsed, path);
    ASSERT_NE(got, nullptr);
    EXPECT_EQ(*got, *want);
  }
  // The defaults the runner used to state itself, read from the struct directly.
  EXPECT_EQ(c.optimizer.beta2, 0.95);
  EXPECT_EQ(c.optimizer.trust_coefficient, 0.02);
  EXPECT_EQ(c.optimizer.eps, 1e-6);
  EXPECT_EQ(c.divergence_factor, 4.0);
  EXPECT_EQ(c.comm.timeout_seconds, 60);
  EXPECT_EQ(c.comm.bucket_mb, 4.5);
  EXPECT_EQ(c.lr.final_lr_fraction, 0.25);
  EXPECT_EQ(c.data.seed, 77);
  EXPECT_EQ(c.gns_every_steps, 5);
  ASSERT_TRUE(c.comm.straggler.has_value());
  EXPECT_EQ(c.comm.straggler->rank, 3);
  EXPECT_EQ(c.comm.sync_every, 8);
  ASSERT_TRUE(c.target.has_value());
  EXPECT_EQ(c.target->op, "<=");
}

TEST(RunConfigDeclarationTest, AbsentFieldsTakeTheDeclaredDefaults) {
  json minimal = {{"batch_size", 64}};
  const json parsed = RunConfigToJson(ParseRunConfig(minimal, 1));
  const RunConfig defaults;  // the structs' initializers (a named object: GCC 12 warns on a temporary)
  const json fresh = RunConfigToJson(defaults);
  int with_default = 0;
  for (const std::string& path : RunConfigFieldsRead()) {
    SCOPED_TRACE(path);
    const config::Field* f = config::FindField(path);
    if (!f->default_value.has_value()) continue;
    const std::string parent = path.substr(0, path.rfind('.'));
    if (parent != path && At(parsed, parent) != nullptr && At(parsed, parent)->is_null()) {
      continue;  // below an object that is null by default (comm.straggler)
    }
    ++with_default;
    ASSERT_NE(At(parsed, path), nullptr);
    EXPECT_EQ(*At(parsed, path), *f->default_value);
    ASSERT_NE(At(fresh, path), nullptr);
    EXPECT_EQ(*At(fresh, path), *f->default_value);
  }
  EXPECT_GT(with_default, 40);
  // Objects with a default as a whole: budget {"epochs": 1}, target null.
  EXPECT_EQ(parsed["budget"], config::DefaultJson("budget"));
  EXPECT_TRUE(parsed["target"].is_null());
}

TEST(RunConfigTest, MinimalConfigGetsDocumentedDefaults) {
  const RunConfig c = ParseRunConfig(Minimal(), 1);
  EXPECT_EQ(c.batch_size, 64);
  EXPECT_EQ(c.local_batch_size, 64);
  EXPECT_EQ(c.micro_batch_size, 64);
  EXPECT_EQ(c.data.name, "fashion-mnist");
  EXPECT_EQ(c.model.name, "mlp");
  EXPECT_EQ(c.model.hidden, std::vector<int64_t>({128}));
  EXPECT_EQ(c.optimizer.name, "momentum");
  EXPECT_EQ(c.comm.backend, "mpi");
  EXPECT_EQ(c.gns_every_steps, 1);
  EXPECT_FALSE(c.target.has_value());
  EXPECT_EQ(c.mode, "train");
}

TEST(RunConfigTest, DerivesLocalAndMicroBatch) {
  json j = Minimal();
  j["batch_size"] = 256;
  j["nodes"] = 2;
  j["accumulation"] = 4;
  const RunConfig c = ParseRunConfig(j, 2);
  EXPECT_EQ(c.world_size, 2);
  EXPECT_EQ(c.local_batch_size, 128);
  EXPECT_EQ(c.micro_batch_size, 32);
}

TEST(RunConfigTest, UnknownFieldsNameTheirPath) {
  json j = Minimal();
  j["optimizer"] = {{"name", "sgd"}, {"momentun", 0.9}};
  EXPECT_NE(ErrorOf(j).find("optimizer.momentun: unknown field; allowed here: name, momentum"),
            std::string::npos)
      << ErrorOf(j);
  j = Minimal();
  j["learning_rate"] = 0.1;
  EXPECT_NE(ErrorOf(j).find("learning_rate: unknown field"), std::string::npos);
}

TEST(RunConfigTest, WrongTypesNameTheirPath) {
  json j = Minimal();
  j["batch_size"] = "64";
  EXPECT_NE(ErrorOf(j).find("batch_size: \"64\" is not a positive integer"), std::string::npos)
      << ErrorOf(j);
  j = Minimal();
  j["model"] = {{"hidden", {128, "x"}}};
  EXPECT_NE(ErrorOf(j).find("model.hidden[1]"), std::string::npos) << ErrorOf(j);
  j = Minimal();
  j["lr"] = {{"rule", "cubic"}};
  EXPECT_NE(ErrorOf(j).find("lr.rule: \"cubic\" is not one of \"none\", \"linear\", \"sqrt\""),
            std::string::npos)
      << ErrorOf(j);
  j = Minimal();
  j["data"] = 3;
  EXPECT_NE(ErrorOf(j).find("data: 3 is not an object"), std::string::npos) << ErrorOf(j);
  j = Minimal();
  j["divergence_factor"] = 1;  // declared > 1
  EXPECT_NE(ErrorOf(j).find("divergence_factor: 1 is out of range: must be > 1"), std::string::npos)
      << ErrorOf(j);
  j = Minimal();
  j["comm"] = {{"timeout_seconds", 0}};
  EXPECT_NE(ErrorOf(j).find("comm.timeout_seconds: 0 is not a positive integer"), std::string::npos)
      << ErrorOf(j);
}

TEST(RunConfigTest, BatchNotDivisibleByRanksTimesAccumulationIsRejected) {
  json j = Minimal();
  j["batch_size"] = 100;
  j["nodes"] = 3;
  const std::string e = ErrorOf(j, 3);
  EXPECT_NE(e.find("batch_size: 100 is not divisible by world_size x accumulation = 3 x 1"),
            std::string::npos)
      << e;
}

TEST(RunConfigTest, InconsistentDerivedValuesAreRejected) {
  json j = Minimal();
  j["local_batch_size"] = 32;
  EXPECT_NE(ErrorOf(j).find("local_batch_size: 32 must equal"), std::string::npos);
  j = Minimal();
  j["world_size"] = 2;
  EXPECT_NE(ErrorOf(j).find("world_size: 2 must equal nodes x ranks_per_node = 1"),
            std::string::npos);
  j = Minimal();  // the launcher started 2 processes for a 1-rank config
  EXPECT_NE(ErrorOf(j, 2).find("mpirun -np 1"), std::string::npos) << ErrorOf(j, 2);
}

// slurm.elastic: an attempt given fewer nodes than the config's (down to the orchestrator's
// BATCHLAB_ELASTIC_MIN_NODES) runs at the rank count it was started with; the derived sizes
// follow it.
TEST(RunConfigTest, AnElasticAttemptTakesItsNodesFromTheLauncher) {
  json j = Minimal();
  j["nodes"] = 3;
  j["batch_size"] = 60;
  j["world_size"] = 3;
  j["local_batch_size"] = 20;
  j["micro_batch_size"] = 20;
  const std::string path = ::testing::TempDir() + "/elastic_config.json";
  std::ofstream(path) << j.dump();
  const auto error_of = [&path](int64_t world) {
    try {
      LoadRunConfig(path, world);
    } catch (const RunnerError& e) {
      EXPECT_EQ(e.exit_code(), 2) << e.what();
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error_of(2).find("mpirun -np 3"), std::string::npos);  // not elastic: exactly 3
  setenv("BATCHLAB_ELASTIC_MIN_NODES", "2", 1);
  RunConfig c = LoadRunConfig(path, 2);
  EXPECT_EQ(c.nodes, 2);
  EXPECT_EQ(c.world_size, 2);
  EXPECT_EQ(c.local_batch_size, 30);
  c = LoadRunConfig(path, 3);  // all of them
  EXPECT_EQ(c.nodes, 3);
  EXPECT_EQ(c.local_batch_size, 20);
  EXPECT_NE(error_of(1).find("nodes: the launcher started 1 ranks, which is not "
                             "ranks_per_node = 1 on each of 2 .. 3 nodes"),
            std::string::npos)
      << error_of(1);
  setenv("BATCHLAB_ELASTIC_MIN_NODES", "two", 1);
  EXPECT_NE(error_of(2).find("BATCHLAB_ELASTIC_MIN_NODES: \"two\" is not a positive number"),
            std::string::npos);
  unsetenv("BATCHLAB_ELASTIC_MIN_NODES");
}

TEST(RunConfigTest, SynchronizationThatCannotRunIsRejected) {
  json j = Minimal();
  j["nodes"] = 2;
  j["comm"] = {{"sync", "backup"}, {"backup_workers", 2}};
  EXPECT_NE(ErrorOf(j, 2).find("comm.backup_workers: 2 would drop every gradient of 2 ranks"),
            std::string::npos)
      << ErrorOf(j, 2);
  j["comm"] = {{"sync", "async_ps"}, {"backend", "gloo"}};
  EXPECT_NE(ErrorOf(j, 2).find("comm.backend: \"gloo\" cannot carry comm.sync \"async_ps\""),
            std::string::npos)
      << ErrorOf(j, 2);
  j = Minimal();
  j["comm"] = {{"sync", "async_ps"}};
  EXPECT_NE(ErrorOf(j).find("comm.sync: \"async_ps\" needs a parameter server"),
            std::string::npos);
  j["comm"] = {{"straggler", {{"rank", 1}, {"delay_ms", 10}}}};
  EXPECT_NE(ErrorOf(j).find("comm.straggler.rank: 1 is not a rank of 1"), std::string::npos)
      << ErrorOf(j);
  j["comm"] = {{"straggler", {{"rank", "slowest"}, {"delay_ms", 10}}}};
  EXPECT_NE(ErrorOf(j).find("comm.straggler.rank"), std::string::npos) << ErrorOf(j);
  j["comm"] = {{"straggler", {{"rank", "random"}}}};
  EXPECT_NE(ErrorOf(j).find("comm.straggler.delay_ms: missing"), std::string::npos) << ErrorOf(j);
  j["comm"] = {{"sync", "gossip"}};
  EXPECT_NE(ErrorOf(j).find("comm.sync"), std::string::npos);
  // "random" is a rank too, and the probability gets its default.
  j["comm"] = {{"straggler", {{"rank", "random"}, {"delay_ms", 10}}}};
  EXPECT_EQ(ErrorOf(j), "");
  const RunConfig c = ParseRunConfig(j, 1);
  ASSERT_TRUE(c.comm.straggler.has_value());
  EXPECT_EQ(c.comm.straggler->rank, CommConfig::Straggler::kRandomRank);
  EXPECT_EQ(c.comm.straggler->probability, 1.0);
  EXPECT_EQ(RunConfigToJson(c)["comm"]["straggler"]["rank"], "random");
}

TEST(RunConfigTest, BudgetAndTargetAreChecked) {
  json j = Minimal();
  j["budget"] = json::object();
  EXPECT_NE(ErrorOf(j).find("budget: no limit set"), std::string::npos);
  j.erase("budget");  // the declared default, {"epochs": 1}
  EXPECT_EQ(ParseRunConfig(j, 1).budget.epochs, 1);
  j = Minimal();
  j["target"] = {{"metric", "test_accuracy"}, {"value", 0.8}};
  EXPECT_NE(ErrorOf(j).find("target.op: missing; target needs metric, op, value"),
            std::string::npos)
      << ErrorOf(j);
  j = Minimal();
  j["target"] = {{"metric", "test_accuracy"}, {"op", ">="}, {"value", 0.8}};
  const RunConfig c = ParseRunConfig(j, 1);
  ASSERT_TRUE(c.target.has_value());
  EXPECT_TRUE(c.target->Met(0.8));
  EXPECT_FALSE(c.target->Met(0.79));
  j["target"] = nullptr;
  EXPECT_FALSE(ParseRunConfig(j, 1).target.has_value());
}

TEST(RunConfigTest, MissingOrMalformedFileIsBadConfig) {
  try {
    LoadRunConfig("/nonexistent/config.json", 1);
    FAIL() << "no error";
  } catch (const RunnerError& e) {
    EXPECT_EQ(e.exit_code(), 2);
    EXPECT_NE(std::string(e.what()).find("--config"), std::string::npos);
  }
}

}  // namespace
}  // namespace batchlab::runner
