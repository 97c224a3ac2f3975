// A branch study end to end with the real batchlab-runner (docs/spec.md "Branch study"): the
// orchestrator runs the trunk, holds its branches until the trunk's checkpoint exists, launches
// them with branch_from.json, and `batchlab analyze cbs` reads them back. The branch at k = 1 with
// the trunk's seed and LR continues the trunk bit for bit: its step losses, as stored in the
// database, equal the trunk's after the branch point. The branches also run at 2 nodes (branch.
// nodes; the trunk has 1): started from the trunk's one-rank checkpoint re-sharded, the k = 1
// branch at 2 ranks continues the trunk within the order of the reductions, and the analysis
// reads the 2-node branches as a point of their own, marked.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <boost/process.hpp>
#include <nlohmann/json.hpp>

#include "results/database.h"
#include "results/schema.h"
#include "tests/support/temp_dir.h"
#include "tests/support/file_text.h"

namespace batchlab::orchestrator {
namespace {

using ::batchlab::testing::ReadFileText;

namespace bp = boost::process;

// A trunk at B0 = 16 on 1,024 Fashion-MNIST rows (12 steps, evaluations every 4) with the given
// "branch" object, run by `batchlab sweep run` on `slots` slots; returns its exit code and stderr.
struct SweepRun {
  int exit_code = -1;
  std::string err;
};
SweepRun RunBranchStudy(const testing::TempDir& dir, const std::string& name,
                        const std::string& branch, const std::string& slots) {
  const std::string spec = dir.path() + "/spec.json";
  std::ofstream(spec) << R"({"name": ")" << name << R"(", "base": {
      "data": {"name": "fashion-mnist", "samples": 1024, "test_samples": 256},
      "model": {"name": "mlp", "hidden": [16]}, "optimizer": {"name": "momentum", "momentum": 0.9},
      "lr": {"base": 0.05, "base_batch_size": 16}, "batch_size": 16,
      "budget": {"steps": 12}, "eval": {"every_steps": 4}, "gns": {"every_steps": 0},
      "checkpoint": {"every_seconds": 0}},
      "branch": )" << branch << R"(, "resources": {"retries": 0}})";
  bp::child c(BATCHLAB_BIN,
              bp::args({"--db", dir.path() + "/batchlab.db", "sweep", "run", spec, "--runs-dir",
                        dir.path() + "/runs", "--runner", RUNNER, "--slots", slots}),
              bp::std_out > bp::null, bp::std_err > (dir.path() + "/err.txt"));
  c.wait();
  return {c.exit_code(), ReadFileText(dir.path() + "/err.txt")};
}

TEST(BranchE2eTest, TrunkThenBranchesThenTheAnalysis) {
  testing::TempDir dir;
  const SweepRun run = RunBranchStudy(dir, "branchy",
                                      R"({"at_steps": [4], "multipliers": [1, 2], "lr_rule": )"
                                      R"("linear", "delta_samples": 64, "nodes": [1, 2], )"
                                      R"("tolerance": 0.5})",
                                      "2");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string db = dir.path() + "/batchlab.db";
  auto rdb = results::OpenReadOnly(db);
  ASSERT_TRUE(rdb.ok()) << rdb.status().message();
  auto q = [&](const std::string& sql) {
    auto v = (*rdb)->QueryInt(sql);
    EXPECT_TRUE(v.ok()) << v.status().message() << "\n" << sql;
    return v.ok() ? *v : -1;
  };
  EXPECT_EQ(q("SELECT count(*) FROM runs WHERE state = 'completed'"), 5);
  EXPECT_EQ(q("SELECT count(*) FROM runs WHERE json_extract(config_json, '$.branch.at_step') = 4"),
            4);
  const std::string trunk = "(SELECT run_key FROM runs WHERE json_extract(config_json, "
                            "'$.branch') IS NULL)";
  const std::string k1 = "(SELECT run_key FROM runs WHERE json_extract(config_json, "
                         "'$.branch.multiplier') = 1 AND json_extract(config_json, '$.nodes') = 1)";
  const std::string k1_2nodes = "(SELECT run_key FROM runs WHERE json_extract(config_json, "
                                "'$.branch.multiplier') = 1 AND json_extract(config_json, "
                                "'$.nodes') = 2)";
  const std::string loss = "(SELECT id FROM metric_names WHERE name = 'loss')";
  // The k = 1 branch's 4 steps are the trunk's steps 5..8, bit for bit.
  EXPECT_EQ(q("SELECT count(*) FROM metrics b JOIN metrics t ON t.step = b.step + 4 AND "
              "t.name_id = b.name_id AND t.value = b.value WHERE b.run_key = " + k1 +
              " AND t.run_key = " + trunk + " AND b.name_id = " + loss),
            4);
  EXPECT_EQ(q("SELECT count(*) FROM metrics WHERE run_key = " + k1 + " AND name_id = " + loss),
            4);
  // At 2 ranks: the same global batches, so the trunk's steps 5..8 up to the reduction order.
  EXPECT_EQ(q("SELECT count(*) FROM metrics b JOIN metrics t ON t.step = b.step + 4 AND "
              "t.name_id = b.name_id AND abs(t.value - b.value) <= 1e-5 * abs(t.value) WHERE "
              "b.run_key = " + k1_2nodes + " AND t.run_key = " + trunk + " AND b.name_id = " +
              loss),
            4);
  const std::string worst = "SELECT CAST(round(max(abs(t.value - b.value) / abs(t.value)) * 1e12) "
                            "AS INTEGER) FROM metrics b JOIN metrics t ON t.step = b.step + 4 AND "
                            "t.name_id = b.name_id WHERE b.run_key = " + k1_2nodes +
                            " AND t.run_key = " + trunk + " AND b.name_id = " + loss;
  std::cout << "k = 1 branch at 2 nodes of a 1-node trunk: largest relative loss difference to "
               "the trunk's steps 5-8 "
            << static_cast<double>(q(worst)) * 1e-12 << "\n";
  // Every branch got the trunk's folders.
  int branch_from = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir.path() + "/runs")) {
    branch_from += e.path().filename() == "branch_from.json" ? 1 : 0;
  }
  EXPECT_EQ(branch_from, 4);

  auto analyze_cbs = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"--db", db, "analyze", "cbs", "--sweep", "branchy",
                                      "--format", "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    bp::ipstream out;
    bp::child a(BATCHLAB_BIN, bp::args(args), bp::std_out > out,
                bp::std_err > (dir.path() + "/err2.txt"));
    std::stringstream text;
    text << out.rdbuf();
    a.wait();
    EXPECT_EQ(a.exit_code(), 0) << ReadFileText(dir.path() + "/err2.txt");
    return nlohmann::json::parse(text.str(), nullptr, false);
  };
  // The analysis takes the spec's branch.tolerance (which its pruning used) unless told otherwise.
  EXPECT_EQ(analyze_cbs({"--tolerance", "0.02"})["cbs"]["tolerance"], 0.02);
  const nlohmann::json j = analyze_cbs({});
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["cbs"]["tolerance"], 0.5);
  EXPECT_EQ(j["cbs"]["smooth_evals"], 1);
  // The trunk's node count (unmarked), then the 2-node branches' point, marked.
  ASSERT_EQ(j["cbs"]["points"].size(), 2u) << j.dump(2);
  for (const nlohmann::json& p : j["cbs"]["points"]) {
    EXPECT_EQ(p["at_step"], 4);
    EXPECT_EQ(p["samples_seen"], 64);
    EXPECT_EQ(p["branches"].size(), 2u);
    // One seed and one evaluation per k: no interval to give, and it says so.
    EXPECT_EQ(p["b_crit"]["interval_available"], false);
  }
  EXPECT_FALSE(j["cbs"]["points"][0].contains("nodes"));
  EXPECT_EQ(j["cbs"]["points"][1]["nodes"], 2);
  EXPECT_NE(j["cbs"]["points"][1]["reading"].get<std::string>().find("branching at 2 nodes"),
            std::string::npos);
}

// Exact pruning of branches (orchestrator/plan/branch_pruning.h): with the LR not scaled, the branch at
// k = 8 takes 2 steps where k = 1 takes 16, so its test loss after the same samples is far above
// k = 1's; once both finished (one slot: smaller k first) the branch at k = 16 cannot change the
// analysis and is never started. The analysis of the pruned study is the one of the branches kept.
TEST(BranchE2eTest, ABranchThatCannotChangeTheAnswerIsNeverStarted) {
  testing::TempDir dir;
  const SweepRun run = RunBranchStudy(
      dir, "pruned",
      R"({"at_steps": [4], "multipliers": [1, 8, 16], "lr_rule": "none", "delta_samples": 256})",
      "1");
  const std::string& err = run.err;
  ASSERT_EQ(run.exit_code, 0) << err;
  const std::string db = dir.path() + "/batchlab.db";
  auto rdb = results::OpenReadOnly(db);
  ASSERT_TRUE(rdb.ok()) << rdb.status().message();
  auto q = [&](const std::string& sql) {
    auto v = (*rdb)->QueryInt(sql);
    EXPECT_TRUE(v.ok()) << v.status().message() << "\n" << sql;
    return v.ok() ? *v : -1;
  };
  const std::string k16 = "json_extract(config_json, '$.branch.multiplier') = 16";
  EXPECT_EQ(q("SELECT count(*) FROM runs WHERE state = 'completed'"), 3) << err;
  EXPECT_EQ(q("SELECT count(*) FROM runs WHERE state = 'pruned' AND " + k16), 1) << err;
  EXPECT_EQ(q("SELECT count(*) FROM attempts a JOIN runs r USING (run_key) WHERE " + k16), 0);
  EXPECT_NE(err.find("pruned before it started"), std::string::npos) << err;
  EXPECT_EQ(q("SELECT count(DISTINCT run_key) FROM events WHERE message LIKE "
                "'%no larger k can change%'"),
            1);
}

}  // namespace
}  // namespace batchlab::orchestrator
