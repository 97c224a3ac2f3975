// Branch runs in-process on one rank (runner/train/branch_start.cc, docs/spec.md "Branch study"): a
// branch starts from the trunk's checkpoint with the trunk's parameters, optimizer state and data
// position. A branch at k = 1 with the trunk's seed and LR continues the trunk bit for bit; a
// branch at k = 2 reads the next 2 x B0 rows the trunk would have read; another seed reads the same
// rows of the epoch in another order; a missing or foreign checkpoint fails with the reason.
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "runner/checkpoint/checkpoint_file.h"
#include "runner/data/dataset.h"
#include "runner/config/runner_error.h"
#include "runner/train/trainer.h"

#include "tests/support/temp_dir.h"

namespace batchlab::runner {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int64_t kB0 = 32;
constexpr int64_t kAt = 4;  // the branch point (trunk step)

class BranchTest : public ::testing::Test {
 protected:
  static json TrunkConfig(const json& patch = json::object()) {
    json j = json::parse(R"({
      "run_id": "00000000000000aa", "batch_size": 32, "seed": 5,
      "data": {"name": "fashion-mnist", "samples": 1024, "test_samples": 256},
      "model": {"name": "mlp", "hidden": [16]},
      "optimizer": {"name": "momentum", "momentum": 0.9},
      "lr": {"base": 0.05, "base_batch_size": 32},
      "budget": {"steps": 10}, "gns": {"every_steps": 0},
      "checkpoint": {"every_steps": 0, "every_seconds": 0, "at_steps": [4]}})");
    j.merge_patch(patch);
    return j;
  }
  // A branch of TrunkConfig(trunk_patch) at kAt: batch k x B0, `steps` steps, its own run id.
  static json BranchConfig(double k, int64_t steps, const json& trunk_patch,
                           const json& patch = json::object()) {
    json j = TrunkConfig(trunk_patch);
    const auto batch = static_cast<int64_t>(k * kB0);
    j["run_id"] = "00000000000000bb";
    j["batch_size"] = batch;
    j["budget"] = {{"samples", steps * batch}};
    j["checkpoint"] = {{"every_steps", 0}, {"every_seconds", 0}};
    j["branch"] = {{"trunk_run_id", "00000000000000aa"}, {"at_step", kAt},
                   {"at_samples", kAt * kB0}, {"trunk_batch_size", kB0}, {"multiplier", k}};
    j.merge_patch(patch);
    return j;
  }

  struct Result {
    std::vector<double> losses;
    torch::Tensor params;
    Outcome outcome;
  };
  // Runs `config` in the attempt folder `dir`; a branch reads the trunk from `trunk_dirs`.
  static Result Train(const json& config, const Dataset& data, const fs::path& dir,
                      std::vector<std::string> trunk_dirs = {}) {
    fs::create_directories(dir);
    if (!trunk_dirs.empty()) {
      std::ofstream(dir / protocol::kBranchFromFile) << json{{"trunk_dirs", trunk_dirs}}.dump();
    }
    const RunConfig c = ParseRunConfig(config, 1);
    Trainer t(c, data, nullptr, nullptr, 0);
    t.set_attempt_dir(dir.string());
    Result r;
    r.outcome = t.Run();
    r.losses = t.losses();
    r.params = t.FlatParameters();
    return r;
  }

  ::batchlab::testing::TempDir temp_;  // removed with its files when the test ends
  fs::path root_ = temp_.path();
};

TEST_F(BranchTest, AtKOneWithTheTrunksSeedItContinuesTheTrunkBitForBit) {
  for (const char* opt : {"momentum", "adam"}) {
    SCOPED_TRACE(opt);
    const json patch = std::string(opt) == "adam"
                           ? json{{"optimizer", {{"name", "adam"}}}, {"lr", {{"base", 0.003}}}}
                           : json::object();
    const Dataset data = LoadDataset(ParseRunConfig(TrunkConfig(patch), 1).data);
    const fs::path trunk_dir = root_ / (std::string("trunk-") + opt);
    const Result trunk = Train(TrunkConfig(patch), data, trunk_dir);
    ASSERT_EQ(trunk.losses.size(), 10u);
    const Result branch = Train(BranchConfig(1, 10 - kAt, patch), data,
                                root_ / (std::string("branch-") + opt), {trunk_dir.string()});
    EXPECT_EQ(branch.outcome, Outcome::kCompleted);
    // The optimizer state came along: dropping it (or the data cursor) changes these.
    EXPECT_EQ(branch.losses, std::vector<double>(trunk.losses.begin() + kAt, trunk.losses.end()));
    EXPECT_TRUE(torch::equal(branch.params, trunk.params));
  }
}

// With an LR too small to move a float32 parameter, every branch step's loss is the mean loss of
// the trunk's parameters at kAt on the rows that step reads: the data position made visible.
TEST_F(BranchTest, AtKTwoItReadsTheRowsTheTrunkWouldHaveReadNext) {
  const json still = {{"lr", {{"base", 1e-30}}}};
  const Dataset data = LoadDataset(ParseRunConfig(TrunkConfig(), 1).data);
  const fs::path trunk_dir = root_ / "trunk";
  Train(TrunkConfig(), data, trunk_dir);
  const Result one = Train(BranchConfig(1, 8, json::object(), still), data, root_ / "k1", {trunk_dir.string()});
  const Result two = Train(BranchConfig(2, 4, json::object(), still), data, root_ / "k2", {trunk_dir.string()});
  ASSERT_EQ(one.losses.size(), 8u);
  ASSERT_EQ(two.losses.size(), 4u);
  for (size_t j = 0; j < 4; ++j) {
    const double pair = 0.5 * (one.losses[2 * j] + one.losses[2 * j + 1]);
    EXPECT_NEAR(two.losses[j], pair, 1e-5 * pair) << "branch step " << j + 1;
  }
  // Not a tautology: the two halves of a pair differ, and so do the pairs.
  EXPECT_GT(std::abs(one.losses[0] - one.losses[1]), 1e-3);
  EXPECT_GT(std::abs(two.losses[0] - two.losses[1]), 1e-3);
}

// Another seed: the rows the trunk had not read this epoch, in another order (the same rows: the
// mean loss over the rest of the epoch at the trunk's parameters is the same).
TEST_F(BranchTest, AnotherSeedReadsTheSameRowsInAnotherOrder) {
  const json still = {{"lr", {{"base", 1e-30}}}};
  const Dataset data = LoadDataset(ParseRunConfig(TrunkConfig(), 1).data);
  const fs::path trunk_dir = root_ / "trunk";
  Train(TrunkConfig(), data, trunk_dir);
  const int64_t rest = 1024 / kB0 - kAt;  // steps left in the epoch
  const Result same = Train(BranchConfig(1, rest, json::object(), still), data, root_ / "s5", {trunk_dir.string()});
  const Result other = Train(BranchConfig(1, rest, json::object(), json::parse(R"({"seed": 6, "lr": {"base": 1e-30}})")),
                             data, root_ / "s6", {trunk_dir.string()});
  ASSERT_EQ(same.losses.size(), static_cast<size_t>(rest));
  ASSERT_EQ(other.losses.size(), static_cast<size_t>(rest));
  EXPECT_NE(same.losses, other.losses);
  const double a = std::accumulate(same.losses.begin(), same.losses.end(), 0.0) / rest;
  const double b = std::accumulate(other.losses.begin(), other.losses.end(), 0.0) / rest;
  EXPECT_NEAR(a, b, 1e-5 * a);
}

TEST_F(BranchTest, AMissingOrForeignCheckpointFailsWithTheReason) {
  const Dataset data = LoadDataset(ParseRunConfig(TrunkConfig(), 1).data);
  const fs::path trunk_dir = root_ / "trunk";
  Train(TrunkConfig(), data, trunk_dir);
  try {
    Train(BranchConfig(2, 2, json::object(), {{"branch", {{"at_step", 5}}}}), data, root_ / "b5",
          {trunk_dir.string()});
    FAIL() << "a branch at a step with no checkpoint started";
  } catch (const RunnerError& e) {
    EXPECT_NE(std::string(e.what()).find("no usable checkpoint of trunk run 00000000000000aa at "
                                         "step 5"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("no such file"), std::string::npos) << e.what();
  }
  try {
    Train(BranchConfig(2, 2, json::object(), {{"branch", {{"trunk_run_id", "00000000000000cc"}}}}), data,
          root_ / "bc", {trunk_dir.string()});
    FAIL() << "a branch started from another run's checkpoint";
  } catch (const RunnerError& e) {
    EXPECT_NE(std::string(e.what()).find("belongs to run \"00000000000000aa\""), std::string::npos)
        << e.what();
  }
  try {  // another model: the parameters do not fit
    Train(BranchConfig(2, 2, json::object(), {{"model", {{"hidden", {8}}}}}), data, root_ / "bm",
          {trunk_dir.string()});
    FAIL() << "a branch of another model started";
  } catch (const RunnerError& e) {
    EXPECT_EQ(e.exit_code(), 2);
    EXPECT_NE(std::string(e.what()).find("branch:"), std::string::npos) << e.what();
  }
}

TEST_F(BranchTest, AnIncompleteBranchObjectIsABadConfigNamingIt) {
  json c = BranchConfig(2, 2, {});
  c["branch"].erase("trunk_batch_size");
  try {
    ParseRunConfig(c, 1);
    FAIL() << "accepted";
  } catch (const RunnerError& e) {
    EXPECT_EQ(e.exit_code(), 2);
    EXPECT_EQ(std::string(e.what()).rfind("branch:", 0), 0u) << e.what();
  }
}

// Batch-size schedules (config "batch_schedule", docs/spec.md "Batch-size schedules") are the
// piecewise constant runs they are made of: B0 up to the switch, then a branch at k = 2 from
// there, with the LR of the new batch by lr.rule (linear: twice the trunk's). Bit for bit, for
// SGD with momentum and for Adam (their state crosses the switch); and an attempt that resumes
// from a checkpoint before the switch crosses it the same way.
TEST_F(BranchTest, AScheduleRunIsItsPiecewiseConstantRunsBitForBit) {
  for (const char* opt : {"momentum", "adam"}) {
    SCOPED_TRACE(opt);
    json patch = {{"lr", {{"rule", "linear"}}}};
    if (std::string(opt) == "adam") {
      patch = {{"optimizer", {{"name", "adam"}}}, {"lr", {{"base", 0.003}, {"rule", "linear"}}}};
    }
    const Dataset data = LoadDataset(ParseRunConfig(TrunkConfig(patch), 1).data);
    const fs::path trunk_dir = root_ / (std::string("trunk-") + opt);
    const Result trunk = Train(TrunkConfig(patch), data, trunk_dir);
    const Result branch = Train(BranchConfig(2, 3, patch), data,
                                root_ / (std::string("branch-") + opt), {trunk_dir.string()});
    json scheduled = TrunkConfig(patch);
    scheduled["run_id"] = "00000000000000cc";
    scheduled["budget"] = {{"steps", kAt + 3}};
    scheduled["batch_schedule"] = {{"at_samples", {kAt * kB0}}, {"batch_sizes", {2 * kB0}}};
    scheduled["checkpoint"] = {{"every_steps", 0}, {"every_seconds", 0}, {"at_steps", {kAt - 1}}};
    const fs::path first = root_ / (std::string("schedule-") + opt);
    const Result s = Train(scheduled, data, first);
    ASSERT_EQ(s.losses.size(), static_cast<size_t>(kAt + 3));
    std::vector<double> pieces(trunk.losses.begin(), trunk.losses.begin() + kAt);
    pieces.insert(pieces.end(), branch.losses.begin(), branch.losses.end());
    EXPECT_EQ(s.losses, pieces);
    EXPECT_TRUE(torch::equal(s.params, branch.params));
    // Not a tautology: after the switch the constant-B0 trunk's losses differ.
    EXPECT_NE(s.losses[kAt], trunk.losses[kAt]);

    // A second attempt resumes from step kAt - 1, before the switch, and crosses it alike.
    scheduled["attempt"] = 2;
    const RunConfig c = ParseRunConfig(scheduled, 1);
    Trainer again(c, data, nullptr, nullptr, 0);
    const fs::path second = root_ / (std::string("schedule-2-") + opt);
    fs::create_directories(second);
    again.set_attempt_dir(second.string());
    again.set_resume_from({EarlierAttempt{1, first.string()}});
    again.Run();
    EXPECT_EQ(again.resumed_from_step(), kAt - 1);
    EXPECT_EQ(again.losses(), s.losses);  // the checkpoint's history, then the steps after it
    EXPECT_TRUE(torch::equal(again.FlatParameters(), s.params));
  }
}

TEST_F(BranchTest, ABadScheduleIsRefusedNamingTheField) {
  auto message = [](const json& schedule, const json& patch = json::object()) {
    json j = TrunkConfig(patch);
    j["batch_schedule"] = schedule;
    try {
      ParseRunConfig(j, 1);
    } catch (const RunnerError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message({{"at_samples", {256, 128}}, {"batch_sizes", {64, 128}}})
                .find("batch_schedule.at_samples[1]: 128 is not above the switch before it"),
            std::string::npos);
  EXPECT_NE(message({{"at_samples", {256}}, {"batch_sizes", {64, 128}}})
                .find("batch_schedule.batch_sizes: 2 batch sizes for 1 switch points"),
            std::string::npos);
  EXPECT_NE(message({{"at_samples", {256}}, {"batch_sizes", {66}}}, {{"accumulation", 4}})
                .find("batch_schedule.batch_sizes[0]: 66 is not divisible by world_size x "
                      "accumulation = 1 x 4"),
            std::string::npos);
  EXPECT_NE(message({{"at_samples", {256}}, {"batch_sizes", {64}}}, {{"comm", {{"sync", "lag"}}}})
                .find("batch_schedule: comm.sync \"lag\" trains at one batch size"),
            std::string::npos);
  EXPECT_NE(message({{"at_samples", {0}}, {"batch_sizes", {64}}}).find("batch_schedule.at_samples"),
            std::string::npos);
  EXPECT_NE(message({{"at_samples", {256}}}).find("batch_schedule.batch_sizes"), std::string::npos);
  EXPECT_EQ(message({{"at_samples", {256}}, {"batch_sizes", {64}}}), "accepted");
}

}  // namespace
}  // namespace batchlab::runner
