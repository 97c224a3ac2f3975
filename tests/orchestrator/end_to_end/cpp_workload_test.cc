// The C++ path (docs/cpp-workload.md) end to end: examples/cpp-workload/res_mlp.cc, one file with
// its one registration line, built into batchlab-runner-example, trains through
// `batchlab sweep run` of the example's own spec (real Fashion-MNIST, 1 and 2 ranks under mpirun),
// and its runs and metrics land in the database. Unknown names and a missing own field exit 2
// naming the field before anything launches.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <boost/filesystem.hpp>
#include <boost/process.hpp>

#include "results/database.h"
#include "results/schema.h"
#include "tests/support/temp_dir.h"

namespace batchlab::orchestrator {
namespace {

namespace bp = boost::process;

struct Result {
  int exit_code = -1;
  std::string out, err;
};

Result Execute(const std::string& program, const std::vector<std::string>& args,
               const std::string& dir) {
  const std::string out = dir + "/out.txt", err = dir + "/err.txt";
  // boost::process opens a redirect target without O_TRUNC: a shorter output would keep the
  // tail of the previous one.
  boost::filesystem::remove(out);
  boost::filesystem::remove(err);
  bp::child c(program, bp::args(args), bp::std_out > out, bp::std_err > err);
  c.wait();
  auto read = [](const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  return {c.exit_code(), read(out), read(err)};
}

TEST(CppWorkloadTest, TheExampleRunnerListsResMlpAndTheBuiltInOneDoesNot) {
  testing::TempDir dir;
  Result example = Execute(EXAMPLE_RUNNER, {"--list"}, dir.path());
  ASSERT_EQ(example.exit_code, 0) << example.err;
  for (const char* needle : {"models:", "  res_mlp ", "own field blocks (an integer >= 1", "  mlp ",
                             "datasets:", "  fashion-mnist "}) {
    EXPECT_NE(example.out.find(needle), std::string::npos) << needle << "\n" << example.out;
  }
  Result builtin = Execute(RUNNER, {"--list"}, dir.path());
  ASSERT_EQ(builtin.exit_code, 0) << builtin.err;
  EXPECT_NE(builtin.out.find("  cnn "), std::string::npos) << builtin.out;
  EXPECT_EQ(builtin.out.find("res_mlp"), std::string::npos) << builtin.out;
}

TEST(CppWorkloadTest, TheExampleSpecTrainsResMlpOnOneAndTwoRanks) {
  testing::TempDir dir;
  const std::string db = dir.path() + "/batchlab.db";
  Result r = Execute(BATCHLAB_BIN,
                     {"--db", db, "sweep", "run", EXAMPLE_SPEC, "--runs-dir", dir.path() + "/runs",
                      "--runner", EXAMPLE_RUNNER, "--slots", "2"},
                     dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto rdb = results::OpenReadOnly(db);
  ASSERT_TRUE(rdb.ok()) << rdb.status().message();
  auto q = [&](const char* sql) {
    auto v = (*rdb)->QueryInt(sql);
    EXPECT_TRUE(v.ok()) << v.status().message();
    return v.ok() ? *v : -1;
  };
  // 2 batch sizes x 1 and 2 ranks, every one trained its 40 steps to the end.
  EXPECT_EQ(q("SELECT count(*) FROM runs WHERE state = 'completed' AND exit_code = 0 "
              "AND model = 'res_mlp'"),
            4);
  EXPECT_EQ(q("SELECT count(*) FROM runs WHERE world_size = 2"), 2);
  EXPECT_EQ(q("SELECT count(*) FROM ingest_cursors WHERE saw_end = 1"), 4);
  EXPECT_EQ(q("SELECT count(*) FROM (SELECT run_key FROM metrics WHERE step = 40 "
              "GROUP BY run_key)"),
            4);
  // The runner's exact parameter count, stored with each run, is res_mlp's: Linear(784 -> 64),
  // 2 blocks of two Linear(64 -> 64), Linear(64 -> 10), with biases.
  const int64_t expected = (784 * 64 + 64) + 2 * 2 * (64 * 64 + 64) + (64 * 10 + 10);
  EXPECT_EQ(q("SELECT count(*) FROM runs WHERE parameters = 67530"), 4);
  EXPECT_EQ(expected, 67530);
}

TEST(CppWorkloadTest, BadNamesAndAMissingOwnFieldExit2NamingTheFieldBeforeAnyLaunch) {
  testing::TempDir dir;
  struct Case {
    std::string model, runner;
    std::vector<std::string> needles;
  };
  const std::vector<Case> cases = {
      {R"({"name": "res_mpl", "hidden": [64], "blocks": 2})",
       EXAMPLE_RUNNER,
       {"base.model.name",
        "\"res_mpl\" is not a registered model; use one of cnn, logreg, mlp, "
        "res_mlp"}},
      {R"({"name": "res_mlp", "hidden": [64]})",
       EXAMPLE_RUNNER,
       {"base.model.blocks", "model.blocks: missing; model \"res_mlp\" needs it"}},
      {R"({"name": "res_mlp", "hidden": [64], "blocks": 0})",
       EXAMPLE_RUNNER,
       {"model.blocks: 0 must be an integer >= 1"}},
      {R"({"name": "res_mlp", "hidden": [64, 32], "blocks": 2})",
       EXAMPLE_RUNNER,
       {"model.hidden: res_mlp has one width for all its blocks"}},
      // The built-in runner has no res_mlp (and no model.blocks).
      {R"({"name": "res_mlp", "hidden": [64], "blocks": 2})",
       RUNNER,
       {"\"res_mlp\" is not a registered model; use one of cnn, logreg, mlp, transformer ("}},
  };
  for (const Case& c : cases) {
    const std::string spec = dir.path() + "/spec.json";
    std::ofstream(spec) << R"({"name": "bad", "base": {"batch_size": 64, "model": )" << c.model
                        << R"(, "budget": {"steps": 2}}})";
    const std::string db = dir.path() + "/bad.db";
    Result r = Execute(BATCHLAB_BIN,
                       {"--db", db, "sweep", "run", spec, "--runs-dir", dir.path() + "/runs",
                        "--runner", c.runner},
                       dir.path());
    EXPECT_EQ(r.exit_code, 2) << c.model << "\n" << r.err;
    for (const std::string& needle : c.needles) {
      EXPECT_NE(r.err.find(needle), std::string::npos) << needle << "\n" << r.err;
    }
    EXPECT_FALSE(boost::filesystem::exists(dir.path() + "/runs")) << c.model;
  }
}

}  // namespace
}  // namespace batchlab::orchestrator
