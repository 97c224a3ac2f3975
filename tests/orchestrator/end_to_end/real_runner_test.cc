// `batchlab sweep run` with the real batchlab-runner (LibTorch, Fashion-MNIST, mpirun -np 1 and
// -np 2): the orchestrator and the runner agree on the protocol end to end.
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <boost/process.hpp>

#include "results/database.h"
#include "results/schema.h"
#include "tests/support/temp_dir.h"

namespace batchlab::orchestrator {
namespace {

namespace bp = boost::process;

TEST(RealRunnerTest, SmallTrainingSweepCompletesWithMetricsFromBothWorldSizes) {
  testing::TempDir dir;
  std::string spec = dir.path() + "/spec.json";
  std::ofstream(spec) << R"({"name": "real", "base": {"data": {"name": "fashion-mnist"},
      "model": {"name": "mlp", "hidden": [32]}, "lr": {"base": 0.05, "base_batch_size": 64},
      "budget": {"steps": 20}, "eval": {"every_steps": 10, "subset": 500}},
      "axes": {"batch_size": [64], "nodes": [1, 2]}, "resources": {"retries": 0}})";
  std::string db = dir.path() + "/batchlab.db";
  bp::child c(BATCHLAB_BIN,
              bp::args({"--db", db, "sweep", "run", spec, "--runs-dir", dir.path() + "/runs",
                        "--runner", RUNNER, "--slots", "2"}),
              bp::std_out > bp::null, bp::std_err > (dir.path() + "/err.txt"));
  c.wait();
  std::ifstream err(dir.path() + "/err.txt");
  std::stringstream ss;
  ss << err.rdbuf();
  ASSERT_EQ(c.exit_code(), 0) << ss.str();
  auto rdb = results::OpenReadOnly(db);
  ASSERT_TRUE(rdb.ok()) << rdb.status().message();
  auto q = [&](const char* sql) {
    auto v = (*rdb)->QueryInt(sql);
    EXPECT_TRUE(v.ok()) << v.status().message();
    return v.ok() ? *v : -1;
  };
  EXPECT_EQ(q("SELECT count(*) FROM runs WHERE state = 'completed' AND exit_code = 0"), 2);
  EXPECT_EQ(q("SELECT count(*) FROM runs WHERE world_size = 2"), 1);
  EXPECT_EQ(q("SELECT count(*) FROM ingest_cursors WHERE saw_end = 1"), 2);
  // 20 steps per run were recorded for each run.
  EXPECT_EQ(q("SELECT count(*) FROM (SELECT run_key FROM metrics WHERE step = 20 "
              "GROUP BY run_key)"),
            2);
}

}  // namespace
}  // namespace batchlab::orchestrator
