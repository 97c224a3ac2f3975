// End to end: the runner's synthetic-linear task (whose noise scale is known in closed form at
// every step, logged as gns_true_*), trained through the orchestrator (`batchlab sweep run`,
// mpirun, ingest into SQLite), then analysed from the database: the B_simple estimate must be
// within 15% of the true value, for both sources of the two batch sizes (2 ranks vs the
// allreduced gradient; 2 micro-batches vs the accumulated gradient on one rank).
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "analysis/estimators/gradient_noise.h"
#include "analysis/data/sweep_data.h"
#include "tests/support/synthetic_sweep.h"

namespace batchlab::analysis {
namespace {

using testing::TempDir;

int RunCommand(const std::string& cmd, std::string* out) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out->append(buf.data(), n);
  const int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The window mean of a metric over the steps in `steps`.
double MeanAt(const Series& s, const std::vector<GnsSample>& steps) {
  double sum = 0;
  size_t n = 0, j = 0;
  for (const GnsSample& g : steps) {
    while (j < s.size() && s.steps[j] < g.step) ++j;
    if (j < s.size() && s.steps[j] == g.step) {
      sum += s.values[j];
      ++n;
    }
  }
  return n ? sum / static_cast<double>(n) : 0;
}

TEST(GnsEndToEndTest, EstimateWithinFifteenPercentOfTheTruth) {
  TempDir dir;
  const std::string spec = dir.File("gns-e2e.json");
  std::ofstream(spec) << R"({
    "name": "gns-e2e",
    "description": "synthetic linear regression with a known noise scale; two GNS sources",
    "base": {
      "batch_size": 64,
      "data": {"name": "synthetic-linear", "features": 16, "noise": 1.0, "samples": 16384},
      "model": {"name": "logreg"},
      "optimizer": {"name": "sgd", "momentum": 0},
      "lr": {"base": 0.001, "base_batch_size": 64},
      "budget": {"steps": 500},
      "eval": {"every_steps": 250},
      "gns": {"every_steps": 1},
      "threads": 1
    },
    "zip": [{"nodes": [2, 1], "accumulation": [1, 2]}],
    "seeds": [1]
  })";
  const std::string db = dir.File("batchlab.db");
  std::string out;
  const int rc =
      RunCommand(fmt::format("{} --db {} sweep run {} --runs-dir {} --runner {} --slots 2",
                             BATCHLAB_BINARY, db, spec, dir.File("runs"), BATCHLAB_RUNNER),
                 &out);
  ASSERT_EQ(rc, 0) << out;

  StatusOr<SweepData> sweep = LoadSweep(db, "gns-e2e", LoadOptions{});
  ASSERT_TRUE(sweep.ok()) << sweep.status().message();
  ASSERT_EQ(sweep->runs.size(), 2u);
  std::vector<GnsEstimate> by_split;  // the same global batch of 64, split two ways
  for (const RunData& run : sweep->runs) {
    SCOPED_TRACE(RunLabel(run) +
                 " accumulation source=" + (run.world_size > 1 ? "ranks" : "micro"));
    EXPECT_EQ(run.state, "completed");
    std::vector<GnsSample> samples = GnsSamplesOf(run);
    ASSERT_GE(samples.size(), 400u);
    EXPECT_EQ(samples.front().b_small, 32);
    EXPECT_EQ(samples.front().b_big, 64);
    GnsOptions opt;
    opt.resamples = 500;
    StatusOr<GnsEstimate> est = EstimateGns(samples, opt);
    ASSERT_TRUE(est.ok()) << est.status().message();
    // The truth of a window estimate (ratio of window means) is the ratio of the window means
    // of the true terms, which the runner logs at every measured step.
    const Series* true_trace = run.Metric("gns_true_trace");
    const Series* true_sq = run.Metric("gns_true_sq");
    ASSERT_NE(true_trace, nullptr);
    ASSERT_NE(true_sq, nullptr);
    const double truth = MeanAt(*true_trace, samples) / MeanAt(*true_sq, samples);
    EXPECT_NEAR(est->b_simple.value / truth, 1.0, 0.15)
        << "estimate " << est->b_simple.value << " [" << est->b_simple.low << ", "
        << est->b_simple.high << "], truth " << truth;
    EXPECT_NEAR(est->trace / MeanAt(*true_trace, samples), 1.0, 0.15);
    by_split.push_back(*est);
  }
  // B_simple does not depend on the split (issue 33): 2 ranks x 32 and 1 rank x 2 micro-batches
  // of 32 see the same samples (the data order is the global one), so each estimate lies within
  // the other's interval.
  ASSERT_EQ(by_split.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const Interval& own = by_split[i].b_simple;
    const double other = by_split[1 - i].b_simple.value;
    EXPECT_TRUE(own.Contains(other))
        << "estimate " << other << " outside [" << own.low << ", " << own.high << "]";
  }

  // The CLI reports the same estimates from the same database.
  out.clear();
  ASSERT_EQ(
      RunCommand(fmt::format("{} --db {} analyze gns --sweep gns-e2e --resamples 500 --format json",
                             BATCHLAB_BINARY, db),
                 &out),
      0)
      << out;
  nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << out;
  EXPECT_EQ(j["gns"]["runs"].size(), 2u);
}

}  // namespace
}  // namespace batchlab::analysis
