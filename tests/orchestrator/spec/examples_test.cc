// The specs in sweeps/ plan, agree with sweeps/spec.schema.json, and produce the runs the
// analysis needs (scaled-down runs of every example are in sweep_cli_test.cc).
#include <fstream>
#include <map>
#include <set>

#include <gtest/gtest.h>
#include <boost/filesystem.hpp>
#include <nlohmann/json.hpp>

#include "orchestrator/spec/config_schema.h"
#include "orchestrator/spec/expansion.h"
#include "orchestrator/spec/spec.h"

namespace batchlab::orchestrator {
namespace {

using nlohmann::json;

Plan PlanOf(const std::string& file) {
  StatusOr<Spec> spec = LoadSpecFile(std::string(SWEEPS_DIR) + "/" + file);
  EXPECT_TRUE(spec.ok()) << spec.status().message();
  if (!spec.ok()) return {};
  StatusOr<Plan> plan = ExpandSpec(*spec, {});
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return plan.ok() ? *plan : Plan{};
}

TEST(ExamplesTest, EveryExampleSpecPlans) {
  int n = 0;
  for (boost::filesystem::directory_iterator it(SWEEPS_DIR), end; it != end; ++it) {
    std::string name = it->path().filename().string();
    if (it->path().extension() != ".json" || name == "spec.schema.json") continue;
    Plan plan = PlanOf(name);
    EXPECT_GT(plan.runs.size(), 0u) << name;
    ++n;
  }
  EXPECT_GE(n, 5);
}

TEST(ExamplesTest, QuickstartKeepsItsGrid) {
  // Batch sizes 16..2048 on 1 rank, B >= 256 also on 2 ranks; no two runs alike.
  Plan plan = PlanOf("quickstart.json");
  ASSERT_EQ(plan.runs.size(), 12u);
  EXPECT_EQ(plan.duplicates, 0);
  std::set<int> batches, worlds;
  for (const auto& r : plan.runs) {
    batches.insert(r.config["batch_size"].get<int>());
    worlds.insert(r.world_size);
  }
  EXPECT_EQ(batches, (std::set<int>{16, 32, 64, 128, 256, 512, 1024, 2048}));
  EXPECT_EQ(worlds, (std::set<int>{1, 2}));
}

TEST(ExamplesTest, CriticalBatchScanHasEveryLrAtEveryBatchSize) {
  Plan plan = PlanOf("critical_batch_scan.json");
  std::map<int, std::set<double>> lrs;
  for (const auto& r : plan.runs) {
    lrs[r.config["batch_size"].get<int>()].insert(r.config["lr"]["base"].get<double>());
    EXPECT_FALSE(r.config["target"].is_null());  // steps-to-target needs a target
    EXPECT_GT(r.config["gns"]["every_steps"].get<int>(), 0);
  }
  EXPECT_GE(lrs.size(), 6u);  // enough batch sizes to fit S = S_min (1 + B_noise / B)
  for (const auto& [b, set] : lrs) EXPECT_EQ(set.size(), 4u) << "batch " << b;
}

TEST(ExamplesTest, NodeScalingHasStrongAndWeakSeries) {
  Plan plan = PlanOf("node_scaling.json");
  std::set<int> strong_nodes, weak_nodes;
  for (const auto& r : plan.runs) {
    int nodes = r.config["nodes"].get<int>();
    if (r.config["batch_size"] == 1024) strong_nodes.insert(nodes);     // global batch fixed
    if (r.config["local_batch_size"] == 256) weak_nodes.insert(nodes);  // per-rank batch fixed
  }
  EXPECT_EQ(strong_nodes, (std::set<int>{1, 2, 4}));
  EXPECT_EQ(weak_nodes, (std::set<int>{1, 2, 4}));
  EXPECT_EQ(plan.duplicates, 3);  // (4 nodes, 1024) is in both series: once per seed
}

TEST(ExamplesTest, OptimizerComparisonPairsEachOptimizerWithItsLr) {
  Plan plan = PlanOf("optimizer_comparison.json");
  std::map<std::string, std::set<double>> lr_of;
  for (const auto& r : plan.runs) {
    lr_of[r.config["optimizer"]["name"].get<std::string>()].insert(
        r.config["lr"]["base"].get<double>());
    EXPECT_GE(r.config["batch_size"].get<int>(), 2048);
  }
  EXPECT_EQ(lr_of.size(), 4u);
  for (const auto& [name, lrs] : lr_of) EXPECT_EQ(lrs.size(), 1u) << name;
}

// The JSON Schema and the validator describe the same config fields and top-level fields.
TEST(ExamplesTest, SchemaMatchesTheValidator) {
  std::ifstream in(std::string(SWEEPS_DIR) + "/spec.schema.json");
  json schema = json::parse(in);
  std::set<std::string> in_schema;
  std::function<void(const json&, const std::string&)> walk = [&](const json& obj,
                                                                  const std::string& prefix) {
    for (auto it = obj["properties"].begin(); it != obj["properties"].end(); ++it) {
      std::string path = prefix.empty() ? it.key() : prefix + "." + it.key();
      in_schema.insert(path);
      if (it.value().contains("properties")) walk(it.value(), path);
    }
  };
  walk(schema["$defs"]["config"], "");
  std::vector<std::string> paths = SettableConfigPaths();
  std::set<std::string> in_validator(paths.begin(), paths.end());
  EXPECT_EQ(in_schema, in_validator);
  // Every top-level field of the schema is known to the parser (a wrong value is reported as a
  // wrong value, never as an unknown field), and a field outside the schema is unknown.
  for (auto it = schema["properties"].begin(); it != schema["properties"].end(); ++it) {
    if (it.key() == "name" || it.key() == "base") continue;
    json doc = {{"name", "s"}, {"base", {{"batch_size", 8}}}, {it.key(), json::array({nullptr})}};
    auto st = ParseSpec(doc.dump(), "t");
    if (!st.ok()) {
      EXPECT_EQ(st.status().message().find("unknown field"), std::string::npos)
          << it.key() << ": " << st.status().message();
    }
  }
  auto unknown = ParseSpec(R"({"name": "s", "base": {"batch_size": 8}, "sweep_over": 1})", "t");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("sweep_over: unknown field"), std::string::npos);
}

}  // namespace
}  // namespace batchlab::orchestrator
