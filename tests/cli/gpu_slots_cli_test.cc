// GPU slots through the `batchlab` binary (docs/spec.md "GPU slots"), without a GPU: `sweep plan`
// shows each run's GPUs and its rank -> device mapping and the plan's totals; a spec whose run
// needs more GPUs than the pool (--gpus, default this machine's) exits 2 naming
// resources.gpus_per_rank, from `sweep plan` and from `sweep run` before the database exists.
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"

namespace {

using batchlab::testing::TempDir;

using Result = batchlab::testing::CommandResult;

// `env` goes before the command (e.g. "CUDA_VISIBLE_DEVICES=0,1 "); "env -u NAME " unsets one.
Result RunBatchlabGpu(const std::string& args,
                   const std::string& env = "env -u CUDA_VISIBLE_DEVICES ") {
  return batchlab::testing::RunCommand(env + std::string(BATCHLAB_BINARY) + " " + args);
}

class GpuSlotsCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Two runs: 2 ranks x 1 GPU and 4 ranks x 1 GPU.
    spec_ = dir_.path() + "/gpu.json";
    std::ofstream(spec_) << R"({"name": "gpu", "base": {"batch_size": 64, "mode": "noop"},
      "axes": {"ranks_per_node": [2, 4]}, "resources": {"gpus_per_rank": 1, "slots_per_rank": 1}})";
    cpu_spec_ = dir_.path() + "/cpu.json";
    std::ofstream(cpu_spec_) << R"({"name": "cpu", "base": {"batch_size": 64, "mode": "noop"}})";
  }
  static bool Has(const Result& r, const std::string& needle) {
    return r.output.find(needle) != std::string::npos;
  }

  TempDir dir_;
  std::string spec_, cpu_spec_;
};

TEST_F(GpuSlotsCliTest, PlanShowsEachRunsGpusAndMappingAndTheTotals) {
  Result r = RunBatchlabGpu("sweep plan '" + spec_ + "' --gpus 4 --slots 8 --no-validate");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Has(r, "gpus")) << r.output;
  EXPECT_TRUE(Has(r, "cuda: rank r -> local rank r")) << r.output;
  EXPECT_TRUE(Has(r, "GPUs: 2 of 2 runs use GPUs (at most 4 per run")) << r.output;
  EXPECT_TRUE(Has(r, "pool 4 GPU(s)")) << r.output;
  // 2-GPU and 4-GPU runs of the same expected length on 4 GPUs: one after the other.
  Result j =
      RunBatchlabGpu("sweep plan '" + spec_ + "' --gpus 4 --slots 8 --no-validate --format json");
  ASSERT_EQ(j.exit_code, 0) << j.output;
  auto doc = nlohmann::json::parse(j.output.substr(j.output.find('{')));
  EXPECT_EQ(doc["gpus"], 4);
  EXPECT_EQ(doc["gpu_runs"], 2);
  ASSERT_EQ(doc["runs"].size(), 2u);
  EXPECT_EQ(doc["runs"][0]["gpus"], 2);
  EXPECT_EQ(doc["runs"][1]["gpus"], 4);
  EXPECT_EQ(doc["runs"][1]["gpus_per_rank"], 1);
  EXPECT_EQ(doc["runs"][1]["cuda"], "cuda: rank r -> local rank r");
  const double each = doc["runs"][0]["expected_seconds"].get<double>();
  EXPECT_NEAR(doc["planned_makespan_seconds"].get<double>(),
              each + doc["runs"][1]["expected_seconds"].get<double>(), 1e-6);
  // CSV has the columns too.
  Result c = RunBatchlabGpu("sweep plan '" + spec_ + "' --gpus 4 --no-validate --format csv");
  ASSERT_EQ(c.exit_code, 0) << c.output;
  EXPECT_TRUE(Has(c, "slots,gpus,")) << c.output;
}

TEST_F(GpuSlotsCliTest, CpuPlanSaysNoGpusAreRequested) {
  Result r = RunBatchlabGpu("sweep plan '" + cpu_spec_ + "' --gpus 0 --no-validate");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Has(r, "GPUs: none requested")) << r.output;
}

TEST_F(GpuSlotsCliTest, ZeroGpusWithGpusPerRankExits2NamingTheField) {
  for (const char* cmd_text : {"sweep plan", "sweep run"}) {
    const std::string cmd = cmd_text;
    const std::string db = dir_.path() + "/never.db";
    Result r = RunBatchlabGpu(cmd + " '" + spec_ + "' --gpus 0 --no-validate --db '" + db + "'");
    EXPECT_EQ(r.exit_code, 2) << cmd << ": " << r.output;
    EXPECT_TRUE(Has(r, "resources.gpus_per_rank")) << r.output;
    EXPECT_TRUE(Has(r, "needs 4 GPU(s) (world_size 4 x gpus_per_rank 1)")) << r.output;
    EXPECT_TRUE(Has(r, "pool has 0 GPU(s)")) << r.output;
    EXPECT_TRUE(Has(r, "--gpus 4")) << r.output;
    EXPECT_TRUE(Has(r, "fewer ranks")) << r.output;
    EXPECT_FALSE(std::filesystem::exists(db)) << cmd << ": the database was created";
  }
  // Too few (not none) is refused the same way.
  Result r = RunBatchlabGpu("sweep plan '" + spec_ + "' --gpus 3 --no-validate");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(Has(r, "pool has 3 GPU(s)")) << r.output;
  // A negative count is a usage error.
  r = RunBatchlabGpu("sweep plan '" + spec_ + "' --gpus -1 --no-validate");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(Has(r, "--gpus")) << r.output;
}

TEST_F(GpuSlotsCliTest, DefaultPoolComesFromCudaVisibleDevices) {
  Result r =
      RunBatchlabGpu("sweep plan '" + spec_ + "' --no-validate", "CUDA_VISIBLE_DEVICES=0,1,2,3 ");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Has(r, "pool 4 GPU(s)")) << r.output;
  r = RunBatchlabGpu("sweep plan '" + spec_ + "' --no-validate", "CUDA_VISIBLE_DEVICES=5,7 ");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(Has(r, "pool has 2 GPU(s)")) << r.output;
}

}  // namespace
