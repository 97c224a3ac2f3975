// The synchronization modes' mpirun runs (tests/runner/CMakeLists.txt, "synchronization modes")
// compared: their final parameters (--dump-params, float32 per rank) and their step lines.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

using nlohmann::json;

std::string Dir() {
  const char* dir = std::getenv("BATCHLAB_SYNC_DIR");
  return dir == nullptr ? "" : dir;
}

std::vector<float> Params(const std::string& run, int rank) {
  const std::string path = Dir() + "/" + run + ".rank" + std::to_string(rank);
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<float> out(bytes.size() / sizeof(float));
  std::copy(bytes.begin(), bytes.begin() + static_cast<long>(out.size() * sizeof(float)),
            reinterpret_cast<char*>(out.data()));
  return out;
}

std::vector<json> Lines(const std::string& run, const std::string& kind) {
  std::ifstream in(Dir() + "/" + run + ".jsonl");
  EXPECT_TRUE(in) << run;
  std::vector<json> out;
  std::string line;
  while (std::getline(in, line)) {
    json j = json::parse(line);
    if (j["kind"] == kind) out.push_back(j);
  }
  return out;
}

// max |a - b| / max |a|
double RelativeDifference(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, static_cast<double>(std::fabs(a[i] - b[i])));
    scale = std::max(scale, static_cast<double>(std::fabs(a[i])));
  }
  return diff / scale;
}

class SyncModesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (Dir().empty()) GTEST_SKIP() << "runs as runner_sync_modes_compare after the mpirun runs";
  }
};

TEST_F(SyncModesTest, EveryModeEndsWithTheSameParametersOnEveryRank) {
  for (const auto& [run, ranks] : std::vector<std::pair<std::string, int>>{
           {"allreduce", 2},
           {"backup_b0", 2},
           {"local_sgd_h1", 2},
           {"local_sgd_h4", 2},
           {"lag", 2},
           {"async_ps_1worker", 2},
           {"backup_b1_straggler", 3},
           {"async_ps_2workers", 3}}) {
    const std::vector<float> rank0 = Params(run, 0);
    ASSERT_FALSE(rank0.empty()) << run;
    for (int r = 1; r < ranks; ++r) EXPECT_EQ(Params(run, r), rank0) << run << " rank " << r;
  }
}

TEST_F(SyncModesTest, BackupWithoutBackupWorkersIsAllreduceBitForBit) {
  EXPECT_EQ(Params("backup_b0", 0), Params("allreduce", 0));
}

TEST_F(SyncModesTest, LocalSgdAveragingEveryStepIsAllreduceUpToRounding) {
  const std::vector<float> reference = Params("allreduce", 0);
  EXPECT_LT(RelativeDifference(reference, Params("local_sgd_h1", 0)), 1e-4);
  // Averaging every 4 steps is another algorithm: its parameters differ measurably.
  EXPECT_GT(RelativeDifference(reference, Params("local_sgd_h4", 0)), 1e-3);
}

TEST_F(SyncModesTest, LagAppliesEachGradientOneStepLate) {
  EXPECT_GT(RelativeDifference(Params("allreduce", 0), Params("lag", 0)), 1e-4);
  const std::vector<json> steps = Lines("lag", "step");
  const std::vector<json> reference = Lines("allreduce", "step");
  ASSERT_EQ(steps.size(), 30u);
  ASSERT_EQ(reference.size(), 30u);
  // Step 1 applies nothing, so step 2 sees the initial weights again: its loss is that of the
  // initial weights on step 2's batch, which allreduce never measures; step 1's are the same.
  EXPECT_EQ(steps[0]["loss"], reference[0]["loss"]);
  EXPECT_EQ(steps[0]["staleness"], 0);
  EXPECT_EQ(steps[0]["effective_batch"], 0);
  for (size_t i = 1; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i]["staleness"], 1) << i;
    EXPECT_EQ(steps[i]["effective_batch"], 128) << i;
  }
}

TEST_F(SyncModesTest, AsyncParameterServerWithOneWorkerIsSequentialSgd) {
  // Two ranks: the server and one worker with a local batch of 64, reading the data as one rank
  // does; the one-rank run at batch 64 is sequential SGD on the same batches.
  EXPECT_EQ(Params("async_ps_1worker", 1), Params("sequential", 0));
  for (const json& step : Lines("async_ps_1worker", "step")) {
    ASSERT_EQ(step["staleness"], 0.0);
    ASSERT_EQ(step["effective_batch"], 64);
  }
}

TEST_F(SyncModesTest, AsyncParameterServerWithTwoWorkersAppliesStaleGradients) {
  const std::vector<json> steps = Lines("async_ps_2workers", "step");
  ASSERT_EQ(steps.size(), 30u);
  double most_stale = 0;
  for (const json& step : steps) {
    ASSERT_EQ(step["effective_batch"], 64);
    most_stale = std::max(most_stale, step["staleness"].get<double>());
  }
  // Both workers start from version 0, so the second of the first two gradients to arrive is
  // applied to parameters one update newer than it was computed on (in steady state, each).
  EXPECT_GE(most_stale, 1.0);
}

TEST_F(SyncModesTest, BackupWorkersDropTheStraggler) {
  const std::vector<json> steps = Lines("backup_b1_straggler", "step");
  ASSERT_EQ(steps.size(), 30u);
  for (const json& step : steps) {
    ASSERT_EQ(step["effective_batch"], 128);  // 2 of 3 local batches of 64
    ASSERT_EQ(step["staleness"], 0.0);
  }
  EXPECT_EQ(Lines("backup_b1_straggler", "end").at(0)["outcome"], "completed");
}

TEST_F(SyncModesTest, EveryStepLineCarriesTheSynchronizationMetrics) {
  for (const std::string run :
       {"allreduce", "lag", "local_sgd_h4", "async_ps_2workers", "backup_b1_straggler"}) {
    for (const json& step : Lines(run, "step")) {
      ASSERT_TRUE(step.contains("wait_seconds")) << run;
      ASSERT_TRUE(step.contains("staleness")) << run;
      ASSERT_TRUE(step.contains("effective_batch")) << run;
      ASSERT_GE(step["wait_seconds"].get<double>(), 0.0) << run;
    }
  }
  const std::vector<json> local = Lines("local_sgd_h4", "step");
  ASSERT_EQ(local.size(), 30u);
  EXPECT_EQ(local[3]["staleness"], 3.0);  // step 4: three steps since the (initial) average
  EXPECT_EQ(local[4]["staleness"], 0.0);  // step 5: right after step 4's average
}

}  // namespace
