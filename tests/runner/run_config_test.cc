// Strict config parsing: every error names its JSON path; derived sizes are checked or filled.
#include "runner/run_config.h"

#include <gtest/gtest.h>

#include <string>

#include "runner/runner_error.h"

namespace batchlab::runner {
namespace {

using nlohmann::json;

json Minimal() { return json::parse(R"({"batch_size": 64, "budget": {"epochs": 1}})"); }

// The message of the BadConfig that parsing `j` throws ("" if it parses).
std::string ErrorOf(const json& j, int64_t world = 1) {
  try {
    ParseRunConfig(j, world);
  } catch (const RunnerError& e) {
    EXPECT_EQ(e.exit_code(), 2) << e.what();
    return e.what();
  }
  return "";
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
  EXPECT_NE(ErrorOf(j).find("optimizer.momentun: unknown field"), std::string::npos) << ErrorOf(j);
  j = Minimal();
  j["learning_rate"] = 0.1;
  EXPECT_NE(ErrorOf(j).find("learning_rate: unknown field"), std::string::npos);
}

TEST(RunConfigTest, WrongTypesNameTheirPath) {
  json j = Minimal();
  j["batch_size"] = "64";
  EXPECT_NE(ErrorOf(j).find("batch_size: \"64\" must be an integer"), std::string::npos)
      << ErrorOf(j);
  j = Minimal();
  j["model"] = {{"hidden", {128, "x"}}};
  EXPECT_NE(ErrorOf(j).find("model.hidden[1]"), std::string::npos) << ErrorOf(j);
  j = Minimal();
  j["lr"] = {{"rule", "cubic"}};
  EXPECT_NE(ErrorOf(j).find("lr.rule: \"cubic\" is not one of: none, linear, sqrt"),
            std::string::npos)
      << ErrorOf(j);
  j = Minimal();
  j["data"] = 3;
  EXPECT_NE(ErrorOf(j).find("data: must be a JSON object"), std::string::npos) << ErrorOf(j);
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

TEST(RunConfigTest, BudgetAndTargetAreChecked) {
  json j = Minimal();
  j.erase("budget");
  EXPECT_NE(ErrorOf(j).find("budget: no limit set"), std::string::npos);
  j = Minimal();
  j["target"] = {{"metric", "test_accuracy"}, {"value", 0.8}};
  EXPECT_NE(ErrorOf(j).find("target.metric: a target needs metric, op and value"),
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
