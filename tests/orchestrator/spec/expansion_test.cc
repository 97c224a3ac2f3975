// Expansion: grids, zipped lists, random samples, constraints, seeds, derived values, limits.
#include "orchestrator/spec/expansion.h"

#include <cmath>
#include <set>

#include <gtest/gtest.h>

#include "orchestrator/spec/run_identity.h"

namespace batchlab::orchestrator {
namespace {

Plan MustExpand(const std::string& text, ExpandOptions options = {}) {
  StatusOr<Spec> spec = ParseSpec(text, "t.json");
  EXPECT_TRUE(spec.ok()) << spec.status().message();
  if (!spec.ok()) return {};
  StatusOr<Plan> plan = ExpandSpec(*spec, options);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return plan.ok() ? *plan : Plan{};
}

Status ExpandError(const std::string& text, ExpandOptions options = {}) {
  StatusOr<Spec> spec = ParseSpec(text, "t.json");
  if (!spec.ok()) return spec.status();
  return ExpandSpec(*spec, options).status();
}

TEST(ExpansionTest, GridIsCrossedInWrittenOrderWithSeedsFastest) {
  Plan plan = MustExpand(R"({"name": "g", "axes": {"batch_size": [64, 256], "lr.rule":
                             ["none", "linear", "sqrt"]}, "seeds": [7, 8]})");
  ASSERT_EQ(plan.runs.size(), 12u);
  EXPECT_EQ(plan.points, 12);
  // run 0: 64/none/7, run 1: 64/none/8, run 2: 64/linear/7, ..., run 6: 256/none/7
  EXPECT_EQ(plan.runs[0].config["batch_size"], 64);
  EXPECT_EQ(plan.runs[0].config["seed"], 7);
  EXPECT_EQ(plan.runs[1].config["seed"], 8);
  EXPECT_EQ(plan.runs[2].config["lr"]["rule"], "linear");
  EXPECT_EQ(plan.runs[6].config["batch_size"], 256);
  EXPECT_EQ(plan.runs[6].config["lr"]["rule"], "none");
  std::set<std::string> ids;
  for (const auto& r : plan.runs) {
    ids.insert(r.id);
    EXPECT_EQ(r.params.at("seed"), std::to_string(r.config["seed"].get<int>()));
    EXPECT_EQ(r.params.at("lr.rule"), r.config["lr"]["rule"].dump());
    EXPECT_EQ(r.ordinal, &r - &plan.runs[0]);
  }
  EXPECT_EQ(ids.size(), 12u);  // every run distinct
}

TEST(ExpansionTest, DefaultsBaseAndAxisValuesMerge) {
  Plan plan = MustExpand(R"({"name": "m", "base": {"batch_size": 64, "optimizer": {"momentum":
                             0.5}}, "axes": {"optimizer.name": ["sgd", "lamb"]}})");
  ASSERT_EQ(plan.runs.size(), 2u);
  const auto& c = plan.runs[1].config;
  EXPECT_EQ(c["optimizer"]["name"], "lamb");
  EXPECT_EQ(c["optimizer"]["momentum"], 0.5);               // from base
  EXPECT_EQ(c["lr"]["rule"], "none");                       // default
  EXPECT_EQ(c["budget"], nlohmann::json({{"epochs", 1}}));  // default budget
  EXPECT_EQ(c["sweep"], "m");
  EXPECT_TRUE(c["target"].is_null());
  EXPECT_EQ(c["mode"], "train");
  EXPECT_EQ(c["run_id"], plan.runs[1].id);
  EXPECT_FALSE(c.contains("attempt"));  // added per attempt at launch
  EXPECT_FALSE(c.contains("metrics_path"));
}

TEST(ExpansionTest, BudgetInBaseReplacesTheDefaultBudget) {
  Plan plan = MustExpand(R"({"name": "b", "base": {"batch_size": 64, "budget": {"steps": 10}}})");
  ASSERT_EQ(plan.runs.size(), 1u);
  EXPECT_EQ(plan.runs[0].config["budget"], nlohmann::json({{"steps", 10}}));
}

TEST(ExpansionTest, DerivedValues) {
  Plan plan = MustExpand(R"({"name": "d", "base": {"batch_size": 1024, "accumulation": 2,
                             "ranks_per_node": 2, "threads": 1, "lr": {"base": 0.1,
                             "base_batch_size": 256}}, "axes": {"nodes": [1, 2], "lr.rule":
                             ["linear", "sqrt"]}, "resources": {"slots_per_rank": 1}})");
  ASSERT_EQ(plan.runs.size(), 4u);
  const auto& two_nodes = plan.runs[2];  // nodes 2, linear
  EXPECT_EQ(two_nodes.config["world_size"], 4);
  EXPECT_EQ(two_nodes.config["local_batch_size"], 256);
  EXPECT_EQ(two_nodes.config["micro_batch_size"], 128);
  EXPECT_EQ(two_nodes.world_size, 4);
  EXPECT_EQ(two_nodes.slots, 4);
  EXPECT_DOUBLE_EQ(two_nodes.scaled_lr, 0.4);     // 0.1 x 1024/256
  EXPECT_DOUBLE_EQ(plan.runs[3].scaled_lr, 0.2);  // 0.1 x sqrt(4)
  EXPECT_EQ(plan.runs[0].config["world_size"], 2);
  EXPECT_EQ(plan.runs[0].config["local_batch_size"], 512);
}

TEST(ExpansionTest, SlotsFollowThreadsUnlessSlotsPerRankIsSet) {
  Plan plan = MustExpand(R"({"name": "t", "base": {"batch_size": 64, "threads": 2, "nodes": 2}})");
  ASSERT_EQ(plan.runs.size(), 1u);
  EXPECT_EQ(plan.runs[0].slots, 4);
}

TEST(ExpansionTest, NotDivisibleBatchIsAnErrorNamingTheField) {
  Status s = ExpandError(R"({"name": "n", "axes": {"batch_size": [64, 100], "nodes": [1, 3]}})");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("axes.batch_size[0]: batch_size 64 is not divisible by world_size x "
                             "accumulation = 3 x 1"),
            std::string::npos)
      << s.message();
  Status base = ExpandError(R"({"name": "n", "base": {"batch_size": 10, "accumulation": 4}})");
  EXPECT_NE(base.message().find("base.batch_size: batch_size 10 is not divisible"),
            std::string::npos)
      << base.message();
}

TEST(ExpansionTest, ConstraintsDropPointsBeforeTheDivisibilityCheck) {
  Plan plan = MustExpand(R"js({"name": "c", "axes": {"batch_size": [16, 64, 100, 60000],
                             "nodes": [1, 4]},
                             "constraints": [
                               {"field": "local_batch_size", "op": ">=", "value": 16},
                               {"field": "batch_size", "op": "<=", "value_of": "sqrt(dataset_size)",
                                "scale": 100},
                               {"field": "batch_size", "op": "!=", "value": 100}]})js");
  // 8 points: (16,4) local 4 dropped by [0]; (60000,*) > 100*sqrt(60000)=24494 dropped by [1];
  // (100,*) dropped by [2] (100/4 would not divide). Left: (16,1), (64,1), (64,4).
  ASSERT_EQ(plan.runs.size(), 3u);
  EXPECT_EQ(plan.points, 8);
  ASSERT_EQ(plan.dropped.size(), 3u);
  EXPECT_EQ(plan.dropped[0], std::make_pair(std::string("constraints[0]"), 1LL));
  EXPECT_EQ(plan.dropped[1].second, 2);
  EXPECT_EQ(plan.dropped[2].second, 2);
  EXPECT_EQ(plan.runs[2].config["local_batch_size"], 16);
}

TEST(ExpansionTest, StringConstraintAndFieldReference) {
  Plan plan = MustExpand(R"({"name": "c", "base": {"batch_size": 64},
                             "axes": {"optimizer.name": ["sgd", "adam", "lars"],
                                      "lr.base_batch_size": [32, 64, 128]},
                             "constraints": [{"field": "optimizer.name", "op": "!=", "value": "adam"},
                                             {"field": "lr.base_batch_size", "op": "<=",
                                              "value_of": "batch_size"}]})");
  ASSERT_EQ(plan.runs.size(), 4u);  // (sgd|lars) x (32|64)
  for (const auto& r : plan.runs) EXPECT_NE(r.config["optimizer"]["name"], "adam");
}

TEST(ExpansionTest, ConstraintOnMissingFieldIsAnError) {
  Status s = ExpandError(R"({"name": "c", "base": {"batch_size": 64},
                             "constraints": [{"field": "target.value", "op": ">", "value": 0}]})");
  EXPECT_NE(s.message().find("constraints[0].field: \"target.value\" is not a field"),
            std::string::npos)
      << s.message();
}

TEST(ExpansionTest, ZippedListsAdvanceTogether) {
  Plan plan = MustExpand(R"({"name": "z", "axes": {"nodes": [1, 2]},
                             "zip": [{"batch_size": [64, 128, 256], "lr.base": [0.1, 0.2, 0.4]}]})");
  ASSERT_EQ(plan.runs.size(), 6u);
  for (const auto& r : plan.runs) {
    double ratio = r.config["lr"]["base"].get<double>() / r.config["batch_size"].get<double>();
    EXPECT_DOUBLE_EQ(ratio, 0.1 / 64);
  }
}

TEST(ExpansionTest, LrTunedPerBatchSizeIsAGridOfTwoAxes) {
  Plan plan = MustExpand(R"({"name": "tune", "axes": {"batch_size": [64, 256, 1024],
                             "lr.base": [0.01, 0.03, 0.1, 0.3]}})");
  ASSERT_EQ(plan.runs.size(), 12u);
  std::set<std::pair<int, double>> pairs;
  for (const auto& r : plan.runs) {
    pairs.insert({r.config["batch_size"].get<int>(), r.config["lr"]["base"].get<double>()});
  }
  EXPECT_EQ(pairs.size(), 12u);
}

TEST(ExpansionTest, RandomSamplesAreSeededInRangeAndCrossedWithTheGrid) {
  const std::string text = R"({"name": "r", "axes": {"batch_size": [64, 128]},
      "random": {"count": 50, "seed": 42, "params": {
        "lr.base": {"log_uniform": [0.001, 1.0]},
        "optimizer.momentum": {"uniform": [0.8, 0.99]},
        "lr.warmup_steps": {"int_uniform": [0, 3]},
        "optimizer.name": {"choice": ["sgd", "momentum", "adam"]}}}})";
  Plan a = MustExpand(text);
  Plan b = MustExpand(text);
  ASSERT_EQ(a.runs.size(), 100u);
  std::set<std::string> names;
  std::set<long long> warmups;
  int below_001 = 0;
  for (size_t i = 0; i < a.runs.size(); ++i) {
    const auto& c = a.runs[i].config;
    EXPECT_EQ(a.runs[i].id, b.runs[i].id);  // same seed, same draws
    double lr = c["lr"]["base"].get<double>();
    EXPECT_GE(lr, 0.001);
    EXPECT_LE(lr, 1.0);
    if (lr < 0.01) ++below_001;
    double m = c["optimizer"]["momentum"].get<double>();
    EXPECT_GE(m, 0.8);
    EXPECT_LE(m, 0.99);
    EXPECT_TRUE(c["lr"]["warmup_steps"].is_number_integer());
    warmups.insert(c["lr"]["warmup_steps"].get<long long>());
    names.insert(c["optimizer"]["name"].get<std::string>());
  }
  EXPECT_EQ(names.size(), 3u);
  EXPECT_EQ(warmups, (std::set<long long>{0, 1, 2, 3}));
  // log-uniform: a third of the draws fall in [0.001, 0.01); uniform would put ~1% there.
  EXPECT_GT(below_001, 10);
  // The same draw is used for both batch sizes: run i (batch 64) and run 50+i (batch 128).
  EXPECT_EQ(a.runs[3].config["lr"]["base"], a.runs[53].config["lr"]["base"]);
  // A different seed gives different draws.
  std::string other = text;
  other.replace(other.find("\"seed\": 42"), 10, "\"seed\": 43");
  Plan c = MustExpand(other);
  EXPECT_NE(a.runs[0].config["lr"]["base"], c.runs[0].config["lr"]["base"]);
}

TEST(ExpansionTest, DuplicatePointsAreMerged) {
  Plan plan = MustExpand(R"({"name": "d", "base": {"batch_size": 64},
                             "zip": [{"lr.base": [0.1, 0.1, 0.2]}]})");
  EXPECT_EQ(plan.runs.size(), 2u);
  EXPECT_EQ(plan.duplicates, 1);
}

TEST(ExpansionTest, MaxRunsRefusesUnlessRaised) {
  const std::string text = R"({"name": "big", "axes": {"batch_size": [64, 128, 256, 512],
                               "lr.base": [0.1, 0.2, 0.3]}, "max_runs": 10})";
  Status s = ExpandError(text);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("max_runs: the spec expands to more than 10 runs"), std::string::npos)
      << s.message();
  ExpandOptions raised;
  raised.max_runs = 12;
  EXPECT_EQ(MustExpand(text, raised).runs.size(), 12u);
}

TEST(ExpansionTest, HugeCrossProductIsRefusedBeforeEnumerating) {
  std::string axis = "[";
  for (int i = 1; i <= 200; ++i) axis += std::to_string(i) + (i < 200 ? "," : "]");
  // 200 x 200 x 100 seeds = 4,000,000 points.
  Status s =
      ExpandError(R"({"name": "h", "base": {"batch_size": 64}, "axes": {"lr.warmup_steps": )" +
                  axis + R"(, "eval.every_steps": )" + axis + R"(}, "repeats": 100})");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("4000000 points, more than batchlab enumerates"), std::string::npos)
      << s.message();
}

TEST(ExpansionTest, PathHelpers) {
  nlohmann::json j = nlohmann::json::object();
  SetPath(j, "a.b.c", 3);
  ASSERT_NE(FindPath(j, "a.b.c"), nullptr);
  EXPECT_EQ(*FindPath(j, "a.b.c"), 3);
  EXPECT_EQ(FindPath(j, "a.x"), nullptr);
  EXPECT_EQ(FindPath(j, "a.b.c.d"), nullptr);
}

}  // namespace
}  // namespace batchlab::orchestrator
