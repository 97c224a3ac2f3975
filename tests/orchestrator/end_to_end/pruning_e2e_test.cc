// Exact pruning end to end: the same steps-to-target sweep (real batchlab-runner, mpirun, SQLite;
// linear regression with Gaussian noise, batch sizes x an LR grid) run with "prune": false and
// with pruning on, into two databases (same sweep name, so the same run ids). `batchlab analyze
// target` and `analyze crit` must give the identical best-steps table (best run, mean steps,
// samples and per-seed steps at every batch size) and the identical S_min, E_min and B_crit
// with their intervals, while the pruned sweep trains fewer steps and records its pruned runs
// with a reason.
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <boost/filesystem.hpp>
#include <boost/process.hpp>
#include <nlohmann/json.hpp>

#include "results/database.h"
#include "results/schema.h"
#include "tests/support/temp_dir.h"

namespace batchlab::orchestrator {
namespace {

namespace bp = boost::process;
using nlohmann::json;

constexpr const char* kSpec = R"({"name": "prune-e2e",
  "base": {"data": {"name": "synthetic-linear", "samples": 4096, "test_samples": 1024},
           "model": {"name": "logreg"}, "optimizer": {"name": "sgd"},
           "lr": {"base_batch_size": 32, "rule": "none"},
           "budget": {"steps": 200}, "eval": {"every_steps": 1, "subset": 0},
           "target": {"metric": "test_loss", "op": "<=", "value": 0.56},
           "gns": {"every_steps": 0}},
  "axes": {"batch_size": [8, 32, 128], "lr.base": [0.003, 0.03, 0.3]},
  "seeds": [1, 2], "resources": {"retries": 0}, "prune": PRUNE})";

class PruningE2eTest : public ::testing::Test {
 protected:
  // Runs the sweep into its own database; returns `analyze WHAT --format json` of it.
  json RunAndAnalyze(bool prune, const std::string& what) {
    const std::string tag = prune ? "on" : "off";
    std::string spec = kSpec;
    spec.replace(spec.find("PRUNE"), 5, prune ? "true" : "false");
    const std::string spec_path = dir_.path() + "/spec-" + tag + ".json";
    std::ofstream(spec_path) << spec;
    const std::string db = Db(prune);
    if (!ran_[prune]) {
      ran_[prune] = true;
      const int code = Cli({"--db", db, "sweep", "run", spec_path, "--runs-dir",
                            dir_.path() + "/runs-" + tag, "--runner", RUNNER, "--slots", "2"});
      EXPECT_EQ(code, 0) << out_;
    }
    EXPECT_EQ(Cli({"--db", db, "analyze", what, "--sweep", "prune-e2e", "--format", "json"}), 0)
        << out_;
    return json::parse(out_, nullptr, false);
  }
  std::string Db(bool prune) const { return dir_.path() + (prune ? "/on.db" : "/off.db"); }

  int Cli(const std::vector<std::string>& args) {
    const std::string out = dir_.path() + "/out.txt", err = dir_.path() + "/err.txt";
    // boost::process opens a redirect target without O_TRUNC: a shorter output would keep the
    // tail of the previous one (and no longer parse as JSON).
    boost::filesystem::remove(out);
    boost::filesystem::remove(err);
    bp::child c(BATCHLAB_BIN, bp::args(args), bp::std_out > out, bp::std_err > err);
    c.wait();
    std::stringstream o, e;
    o << std::ifstream(out).rdbuf();
    e << std::ifstream(err).rdbuf();
    out_ = o.str();
    err_ = e.str();
    if (c.exit_code() != 0) out_ += err_;
    return c.exit_code();
  }

  int64_t Query(bool prune, const std::string& sql) {
    auto db = results::OpenReadOnly(Db(prune));
    EXPECT_TRUE(db.ok()) << db.status().message();
    if (!db.ok()) return -1;
    auto v = (*db)->QueryInt(sql);
    EXPECT_TRUE(v.ok()) << v.status().message();
    return v.ok() ? *v : -1;
  }

  testing::TempDir dir_;
  bool ran_[2] = {false, false};
  std::string out_, err_;
};

TEST_F(PruningE2eTest, SameBestStepsAndCriticalBatchWithFewerSteps) {
  const json off = RunAndAnalyze(false, "target");
  const json on = RunAndAnalyze(true, "target");
  ASSERT_TRUE(off.contains("target")) << off.dump();
  ASSERT_TRUE(on.contains("target")) << on.dump();
  const json& a = off["target"]["per_batch_size"];
  const json& b = on["target"]["per_batch_size"];
  ASSERT_EQ(a.size(), 3u);
  ASSERT_EQ(a.size(), b.size());
  int reached_batches = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    SCOPED_TRACE(a[k]["batch_size"].dump());
    EXPECT_EQ(a[k]["batch_size"], b[k]["batch_size"]);
    EXPECT_EQ(a[k]["best_steps"], b[k]["best_steps"]);
    EXPECT_EQ(a[k]["best_samples"], b[k]["best_samples"]);
    EXPECT_EQ(a[k]["seed_steps"], b[k]["seed_steps"]);
    if (a[k]["best_steps"].is_null()) continue;
    ++reached_batches;
    EXPECT_EQ(a[k]["best_run"]["run_id"], b[k]["best_run"]["run_id"]);
    EXPECT_EQ(a[k]["pruned"], 0);
  }
  EXPECT_EQ(reached_batches, 3);  // the problem is tuned so every batch size reaches it

  const json crit_off = RunAndAnalyze(false, "crit");
  const json crit_on = RunAndAnalyze(true, "crit");
  ASSERT_FALSE(crit_off["crit"].contains("error")) << crit_off.dump();
  for (const char* field : {"s_min", "e_min", "b_crit"}) {
    SCOPED_TRACE(field);
    EXPECT_EQ(crit_off["crit"][field], crit_on["crit"][field]);
  }

  // Pruning happened, with reasons, and saved steps; without it nothing was pruned.
  EXPECT_EQ(Query(false, "SELECT count(*) FROM runs WHERE state = 'pruned'"), 0);
  const int64_t pruned = Query(true, "SELECT count(*) FROM runs WHERE state = 'pruned'");
  EXPECT_GT(pruned, 0);
  // Every pruned run has its reason; a run asked to stop may still have met its target first
  // (docs/protocol.md, "Stop file"), so there can be more reasons than pruned runs.
  EXPECT_EQ(Query(true,
                  "SELECT count(*) FROM runs WHERE state = 'pruned' AND run_key NOT IN "
                  "(SELECT run_key FROM events WHERE kind = 'prune' AND "
                  "message LIKE '%can%be the best%')"),
            0);
  EXPECT_GE(Query(true,
                  "SELECT count(DISTINCT run_key) FROM events WHERE kind = 'prune' AND "
                  "message LIKE '%can%be the best%'"),
            pruned);
  // A run stopped while it ran either honoured the stop file (exit 6, end line `pruned`) or
  // met its target first; none was killed.
  EXPECT_EQ(Query(true,
                  "SELECT count(*) FROM runs WHERE state = 'pruned' AND attempt > 0 AND "
                  "(exit_code IS NOT 6 OR outcome IS NOT 'pruned')"),
            0);
  const int64_t steps_off = Query(false, "SELECT sum(coalesce(steps, 0)) FROM runs");
  const int64_t steps_on = Query(true, "SELECT sum(coalesce(steps, 0)) FROM runs");
  EXPECT_LT(steps_on, steps_off);
  std::printf("pruning: %lld of %lld steps (%lld runs pruned)\n", static_cast<long long>(steps_on),
              static_cast<long long>(steps_off), static_cast<long long>(pruned));
}

}  // namespace
}  // namespace batchlab::orchestrator
