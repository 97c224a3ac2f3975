// A branch study's spec section and expansion (orchestrator/spec/branch_study.h): the trunk keeps its
// run id and gets the branch points as kept checkpoints; every (point, k, seed) is a branch with
// batch k x B0, the trunk's LR at the point scaled by the rule, the same Δ samples, no target and
// the trunk's id in its config; bad input names the field and the fix.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "orchestrator/spec/expansion.h"
#include "orchestrator/spec/run_identity.h"

namespace batchlab::orchestrator {
namespace {

constexpr const char* kTrunk = R"("name": "b", "base": {"batch_size": 32,
    "optimizer": {"name": "adam"}, "lr": {"base": 0.002, "base_batch_size": 16, "rule": "sqrt",
    "warmup_steps": 5}, "budget": {"samples": 3200},
    "target": {"metric": "test_loss", "op": "<=", "value": 0.1}})";

std::string BranchSpecText(const std::string& branch, const std::string& more = "") {
  return std::string("{") + kTrunk + more + ", \"branch\": " + branch + "}";
}

StatusOr<Plan> Expand(const std::string& text) {
  StatusOr<orchestrator::Spec> spec = ParseSpec(text, "t.json");
  if (!spec.ok()) return spec.status();
  return ExpandSpec(*spec, {});
}

std::string ErrorOf(const std::string& text) {
  StatusOr<Plan> plan = Expand(text);
  EXPECT_FALSE(plan.ok()) << text;
  return plan.ok() ? "" : plan.status().message();
}

TEST(BranchStudyTest, TheTrunkAndItsBranches) {
  StatusOr<Plan> plan = Expand(BranchSpecText(R"({"at_samples": [320, 1000], "multipliers": [0.5, 1, 4],
                                        "delta_samples": 640, "seeds": [1, 2]})"));
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_EQ(plan->runs.size(), 1u + 2 * 3 * 2);
  const PlannedRun& trunk = plan->runs[0];
  EXPECT_TRUE(trunk.trunk_id.empty());
  // 1000 samples round up to whole steps of 32: step 32.
  EXPECT_EQ(trunk.config["checkpoint"]["at_steps"], nlohmann::json({10, 32}));
  // The checkpoints are not part of the trunk's id: the same run as without the study.
  StatusOr<Plan> alone = Expand(std::string("{") + kTrunk + "}");
  ASSERT_TRUE(alone.ok());
  EXPECT_EQ(trunk.id, alone->runs[0].id);

  const double trunk_lr = 0.002 * std::sqrt(32.0 / 16.0);
  std::set<std::string> ids;
  for (size_t i = 1; i < plan->runs.size(); ++i) {
    const PlannedRun& b = plan->runs[i];
    const nlohmann::json& c = b.config;
    ids.insert(b.id);
    EXPECT_EQ(b.trunk_id, trunk.id);
    EXPECT_EQ(c["branch"]["trunk_run_id"], trunk.id);
    const double k = c["branch"]["multiplier"].get<double>();
    EXPECT_EQ(c["batch_size"], std::llround(32 * k));
    EXPECT_EQ(c["local_batch_size"], std::llround(32 * k));
    EXPECT_DOUBLE_EQ(c["lr"]["base"].get<double>(), trunk_lr);
    EXPECT_EQ(c["lr"]["base_batch_size"], 32);
    EXPECT_EQ(c["lr"]["rule"], "sqrt");
    EXPECT_EQ(c["lr"]["warmup_steps"], 0);
    EXPECT_EQ(c["budget"], nlohmann::json({{"samples", 640}}));
    EXPECT_TRUE(c["target"].is_null());
    EXPECT_EQ(c["branch"]["at_samples"], b.branch_step * 32);
    EXPECT_EQ(c["run_id"], b.id);
    EXPECT_EQ(b.id, RunIdOf(c));
    EXPECT_NEAR(b.scaled_lr, trunk_lr * std::sqrt(k), 1e-15);
    EXPECT_EQ(b.params.at("branch.at_step"), std::to_string(b.branch_step));
  }
  EXPECT_EQ(ids.size(), 12u);
}

// A user program (the Python client) is a trunk like the runner: it has no `comm` section (its
// sync is allreduce), keeps the points as checkpoints, and its branches run the same program.
TEST(BranchStudyTest, AUserProgramIsATrunkToo) {
  StatusOr<Plan> plan = Expand(R"({"name": "u", "base": {"program": {"command": ["/bin/true"]},
      "batch_size": 32, "lr": {"base": 0.002, "base_batch_size": 16, "rule": "sqrt"},
      "budget": {"samples": 3200}},
      "branch": {"at_steps": [10], "multipliers": [1, 2], "delta_samples": 640}})");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_EQ(plan->runs.size(), 3u);
  EXPECT_FALSE(plan->runs[0].program.builtin);
  EXPECT_FALSE(plan->runs[0].config.contains("comm"));
  EXPECT_EQ(plan->runs[0].config["checkpoint"]["at_steps"], nlohmann::json({10}));
  for (size_t i = 1; i < 3; ++i) {
    EXPECT_FALSE(plan->runs[i].program.builtin);
    EXPECT_EQ(plan->runs[i].program.command, plan->runs[0].program.command);
    EXPECT_EQ(plan->runs[i].config["branch"]["at_step"], 10);
    EXPECT_EQ(plan->runs[i].trunk_id, plan->runs[0].id);
  }
}

TEST(BranchStudyTest, EverySamplesAndFractionsPlaceThePoints) {
  StatusOr<Plan> every = Expand(BranchSpecText(R"({"every_samples": 960, "multipliers": [1, 2],
                                         "delta_samples": 128})"));
  ASSERT_TRUE(every.ok()) << every.status().message();
  // 3200 samples = 100 steps: points at 960, 1920, 2880 samples = steps 30, 60, 90.
  EXPECT_EQ(every->runs[0].config["checkpoint"]["at_steps"], nlohmann::json({30, 60, 90}));
  StatusOr<Plan> frac = Expand(BranchSpecText(R"({"at_fractions": [0.25, 0.5], "multipliers": [1, 2],
                                        "delta_samples": 128})"));
  ASSERT_TRUE(frac.ok()) << frac.status().message();
  EXPECT_EQ(frac->runs[0].config["checkpoint"]["at_steps"], nlohmann::json({25, 50}));
  // No seeds: the trunk's own seed (the branch at k = 1 continues the trunk's data order).
  EXPECT_EQ(frac->runs[1].config["seed"], frac->runs[0].config["seed"]);
}

// The LR search per branch batch: every (point, k, seed) at each factor of the rule's LR, the
// factor a param of the run (and its LR in its config); no factors: the runs of before.
TEST(BranchStudyTest, LrFactorsRunEveryBranchAtEachFactor) {
  const std::string branch = R"("at_samples": [320], "multipliers": [1, 4], "delta_samples": 640)";
  StatusOr<Plan> plain = Expand(BranchSpecText("{" + branch + "}"));
  StatusOr<Plan> searched = Expand(BranchSpecText("{" + branch + R"(, "lr_factors": [0.5, 1, 2]})"));
  ASSERT_TRUE(plain.ok() && searched.ok());
  ASSERT_EQ(plain->runs.size(), 1u + 2);
  ASSERT_EQ(searched->runs.size(), 1u + 2 * 3);
  const double trunk_lr = 0.002 * std::sqrt(32.0 / 16.0);
  std::set<std::string> plain_ids, searched_ids;
  for (size_t i = 1; i < plain->runs.size(); ++i) plain_ids.insert(plain->runs[i].id);
  for (size_t i = 1; i < searched->runs.size(); ++i) {
    const PlannedRun& b = searched->runs[i];
    const double factor = std::stod(b.params.at("branch.lr_factor"));
    EXPECT_DOUBLE_EQ(b.config["lr"]["base"].get<double>(), trunk_lr * factor);
    searched_ids.insert(b.id);
    EXPECT_EQ(plain_ids.count(b.id), factor == 1 ? 1u : 0u);  // factor 1: the plain branch
  }
  EXPECT_EQ(searched_ids.size(), 6u);
  EXPECT_EQ(plain->runs[1].params.count("branch.lr_factor"), 0u);
  EXPECT_NE(ErrorOf(BranchSpecText("{" + branch + R"(, "lr_factors": [1, 1]})")).find(
                "branch.lr_factors: has a value twice"),
            std::string::npos);
  EXPECT_NE(ErrorOf(BranchSpecText("{" + branch + R"(, "lr_factors": [0, 1]})")).find("branch.lr_factors"),
            std::string::npos);
}

// branch.nodes: every branch also at each node count (its nodes, world size and local sizes);
// the one at the trunk's count is the branch without the field, run id and all.
TEST(BranchStudyTest, NodesRunEveryBranchAtEachNodeCount) {
  const std::string branch = R"("at_samples": [320], "multipliers": [1, 4], "delta_samples": 640)";
  StatusOr<Plan> plain = Expand(BranchSpecText("{" + branch + "}"));
  StatusOr<Plan> spread = Expand(BranchSpecText("{" + branch + R"(, "nodes": [1, 2, 4]})"));
  ASSERT_TRUE(plain.ok() && spread.ok()) << spread.status().message();
  ASSERT_EQ(plain->runs.size(), 1u + 2);
  ASSERT_EQ(spread->runs.size(), 1u + 2 * 3);
  EXPECT_EQ(spread->runs[0].id, plain->runs[0].id);  // the trunk
  std::set<std::string> plain_ids, ids;
  for (size_t i = 1; i < plain->runs.size(); ++i) plain_ids.insert(plain->runs[i].id);
  for (size_t i = 1; i < spread->runs.size(); ++i) {
    const PlannedRun& b = spread->runs[i];
    const nlohmann::json& c = b.config;
    const long long nodes = c["nodes"].get<long long>();
    EXPECT_EQ(b.params.at("nodes"), std::to_string(nodes));
    EXPECT_EQ(c["world_size"], nodes);
    EXPECT_EQ(b.world_size, nodes);
    EXPECT_EQ(b.slots, nodes * spread->runs[0].slots);
    EXPECT_EQ(c["local_batch_size"], c["batch_size"].get<long long>() / nodes);
    EXPECT_EQ(c["micro_batch_size"], c["batch_size"].get<long long>() / nodes);
    EXPECT_EQ(b.id, RunIdOf(c));
    ids.insert(b.id);
    EXPECT_EQ(plain_ids.count(b.id), nodes == 1 ? 1u : 0u) << nodes;
  }
  EXPECT_EQ(ids.size(), 6u);
  EXPECT_EQ(plain->runs[1].params.count("nodes"), 0u);
  const std::string odd = ErrorOf(BranchSpecText("{" + branch + R"(, "nodes": [1, 3]})"));
  EXPECT_NE(odd.find("branch.nodes[1]: 3 nodes x 1 ranks_per_node x accumulation 1 = 3 does "
                     "not divide the batch 32 of multipliers[0] = 1"),
            std::string::npos)
      << odd;
  EXPECT_NE(ErrorOf(BranchSpecText("{" + branch + R"(, "nodes": [2, 2]})")).find(
                "branch.nodes: has a node count twice"),
            std::string::npos);
  EXPECT_NE(ErrorOf(BranchSpecText("{" + branch + R"(, "nodes": [0]})")).find("branch.nodes[0]"),
            std::string::npos);
}

TEST(BranchStudyTest, BadInputNamesTheFieldAndTheFix) {
  const std::string after = ErrorOf(BranchSpecText(R"({"at_samples": [3200], "multipliers": [1, 2],
                                              "delta_samples": 128})"));
  EXPECT_NE(after.find("branch.at_samples[0]: 3200 is at or after the trunk's end"),
            std::string::npos)
      << after;
  const std::string divisible =
      ErrorOf(BranchSpecText(R"({"at_steps": [10], "multipliers": [1, 0.1875], "delta_samples": 96})",
                   R"(, "axes": {"ranks_per_node": [4]})"));
  EXPECT_NE(divisible.find("branch.multipliers[1]: 0.1875 x 32 = batch 6 is not divisible by "
                           "world_size x accumulation = 4 x 1"),
            std::string::npos)
      << divisible;
  const std::string zero =
      ErrorOf(BranchSpecText(R"({"at_steps": [10], "multipliers": [1, 2], "delta_samples": 0})"));
  EXPECT_NE(zero.find("branch.delta_samples: 0 trains nothing"), std::string::npos) << zero;
  const std::string uneven =
      ErrorOf(BranchSpecText(R"({"at_steps": [10], "multipliers": [1, 2], "delta_samples": 96})"));
  EXPECT_NE(uneven.find("branch.delta_samples: 96 is not a whole number of steps at batch 64"),
            std::string::npos)
      << uneven;
  const std::string no_ckpt = ErrorOf(BranchSpecText(
      R"({"at_steps": [10], "multipliers": [1, 2], "delta_samples": 128})",
      R"(, "axes": {"comm.sync": ["async_ps"], "ranks_per_node": [2]})"));
  EXPECT_NE(no_ckpt.find("comm.sync: \"async_ps\" checkpoints do not restore the run exactly"),
            std::string::npos)
      << no_ckpt;
  EXPECT_NE(no_ckpt.find("use \"allreduce\", \"lag\" or \"local_sgd\" for a branch study"),
            std::string::npos)
      << no_ckpt;
  const std::string warm =
      ErrorOf(BranchSpecText(R"({"at_steps": [3], "multipliers": [1, 2], "delta_samples": 128})"));
  EXPECT_NE(warm.find("inside the trunk's warmup"), std::string::npos) << warm;
  const std::string whole =
      ErrorOf(BranchSpecText(R"({"at_steps": [10], "multipliers": [0.3], "delta_samples": 128})"));
  EXPECT_NE(whole.find("branch.multipliers[0]: 0.3 x the trunk's batch 32"), std::string::npos)
      << whole;
  const std::string epochs = ErrorOf(
      R"({"name": "e", "base": {"batch_size": 32}, "branch": {"at_steps": [10],
          "multipliers": [1, 2], "delta_samples": 128}})");
  EXPECT_NE(epochs.find("base.budget: a branch study's trunk needs a budget in steps or samples"),
            std::string::npos)
      << epochs;
  const std::string two = ErrorOf(BranchSpecText(
      R"({"at_steps": [10], "at_samples": [10], "multipliers": [1], "delta_samples": 128})"));
  EXPECT_NE(two.find("exactly one of at_steps"), std::string::npos) << two;
  const std::string typo = ErrorOf(BranchSpecText(
      R"({"at_steps": [10], "multiplier": [1], "delta_samples": 128})"));
  EXPECT_NE(typo.find("branch.multiplier: unknown field"), std::string::npos) << typo;
  const std::string set_by_hand = ErrorOf(
      R"({"name": "h", "base": {"batch_size": 32, "branch": {"trunk_run_id": "x"}}})");
  EXPECT_NE(set_by_hand.find("base.branch"), std::string::npos) << set_by_hand;
}

}  // namespace
}  // namespace batchlab::orchestrator
