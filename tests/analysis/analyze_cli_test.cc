// `batchlab analyze ...` and `batchlab report` end to end: the real binary on a real results
// database written through the Store, checked against the synthetic sweep's known answers.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/synthetic_sweep.h"

namespace batchlab::analysis {
namespace {

using testing::SyntheticSweep;
using testing::TempDir;

struct Result {
  int exit_code = -1;
  std::string out;  // stdout and stderr
};

Result RunCli(const std::string& args) {
  Result r;
  const std::string cmd = std::string(BATCHLAB_BINARY) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

class AnalyzeCliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    db_ = dir_->File("batchlab.db");
    truth_ = testing::WriteSyntheticSweep(db_, dir_->path());
    // For looking at the CLI's output by hand: a copy of the database survives the test.
    if (const char* keep = std::getenv("BATCHLAB_ANALYSIS_KEEP_DB")) {
      std::filesystem::copy_file(db_, keep, std::filesystem::copy_options::overwrite_existing);
    }
  }
  static void TearDownTestSuite() { delete dir_; }
  static Result Analyze(const std::string& args) { return RunCli("--db " + db_ + " " + args); }
  static nlohmann::json Json(const std::string& args) {
    Result r = Analyze(args + " --format json");
    EXPECT_EQ(r.exit_code, 0) << r.out;
    return nlohmann::json::parse(r.out, nullptr, false);
  }

  static TempDir* dir_;
  static std::string db_;
  static SyntheticSweep truth_;
};

TempDir* AnalyzeCliTest::dir_ = nullptr;
std::string AnalyzeCliTest::db_;
SyntheticSweep AnalyzeCliTest::truth_;

TEST_F(AnalyzeCliTest, TargetReportsBestStepsAndEveryOutcome) {
  nlohmann::json j = Json("analyze target --sweep synthetic");
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["target"]["target"], "test_accuracy>=0.85");
  const auto& best = j["target"]["per_batch_size"];
  ASSERT_EQ(best.size(), 5u);
  for (const auto& b : best) {
    const int64_t batch = b["batch_size"];
    EXPECT_EQ(b["best_steps"].get<double>(),
              SyntheticSweep::StepsTo(batch, 0.1, truth_.s_min, truth_.b_noise))
        << batch;
  }
  EXPECT_EQ(best[0]["unfinished"], 1);  // B=32 lr=0.05 K=4 is pending
  EXPECT_EQ(best[4]["diverged"], 1);    // B=512 lr=0.05 K=4 diverged

  Result table = Analyze("analyze target --sweep synthetic");
  EXPECT_EQ(table.exit_code, 0);
  EXPECT_NE(table.out.find("Best steps to target per batch size"), std::string::npos);
  EXPECT_NE(table.out.find("diverged"), std::string::npos);
}

TEST_F(AnalyzeCliTest, CritRecoversTheGeneratingModel) {
  nlohmann::json j = Json("analyze crit --sweep synthetic --resamples 500");
  const auto& c = j["crit"];
  ASSERT_FALSE(c.contains("error")) << c.dump();
  // Steps are rounded up to whole steps, so the recovery is close, not exact.
  EXPECT_NEAR(c["b_crit"]["value"].get<double>(), truth_.b_noise, 0.1 * truth_.b_noise);
  EXPECT_NEAR(c["s_min"]["value"].get<double>(), truth_.s_min, 0.1 * truth_.s_min);
  EXPECT_LE(c["b_crit"]["low"].get<double>(), truth_.b_noise * 1.02);
  EXPECT_GE(c["b_crit"]["high"].get<double>(), truth_.b_noise * 0.98);
  // B_simple of the synthetic GNS data is ~190: the ratio to B_crit is near 1.
  EXPECT_NEAR(c["b_simple_over_b_crit"].get<double>(), truth_.b_simple / truth_.b_noise, 0.25);
}

TEST_F(AnalyzeCliTest, GnsNearTheNoisyQuadraticTruth) {
  nlohmann::json j = Json("analyze gns --sweep synthetic --resamples 200");
  const auto& g = j["gns"];
  EXPECT_EQ(g["runs"].size(), 19u);  // every started multi-rank run (20 minus the pending one)
  // Each run has only ~20-150 samples: the median over runs is the stable figure.
  EXPECT_NEAR(g["median"].get<double>(), truth_.b_simple, 0.25 * truth_.b_simple);
}

TEST_F(AnalyzeCliTest, ScalingRecoversAlphaAndBeta) {
  nlohmann::json j = Json("analyze scaling --sweep synthetic");
  const auto& ab = j["scaling"]["alpha_beta"];
  ASSERT_FALSE(ab.contains("error")) << ab.dump();
  EXPECT_NEAR(ab["alpha_seconds"].get<double>(), truth_.alpha, 1e-3 * truth_.alpha);
  EXPECT_NEAR(ab["beta_bytes_per_second"].get<double>(), truth_.beta, 1e-3 * truth_.beta);
  ASSERT_FALSE(j["scaling"]["strong"].empty());
  // Strong scaling at B=512: step = c·B/K + o + ring(K); efficiency follows exactly.
  for (const auto& r : j["scaling"]["strong"]) {
    if (r["group"] != "B=512" || r["world_size"] != 2) continue;
    const double t1 = truth_.c * 512 + truth_.o;
    const double t2 =
        truth_.c * 256 + truth_.o +
        RingAllreduceSeconds(2, GradientBytes(truth_.parameters), truth_.alpha, truth_.beta);
    EXPECT_NEAR(r["efficiency"].get<double>(), t1 / t2 / 2, 1e-9);
  }
}

TEST_F(AnalyzeCliTest, ProjectionIsLabelledAndUsesTheProfile) {
  Result r = Analyze("analyze project --sweep synthetic --profile ib-400g");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("PROJECTION (a model, not a measurement): ib-400g"), std::string::npos);
  nlohmann::json j = Json("analyze project --sweep synthetic --max-nodes 8");
  const auto& p = j["projection"];
  ASSERT_FALSE(p.contains("error")) << p.dump();
  EXPECT_TRUE(p["model"].get<bool>());
  EXPECT_NEAR(p["compute"]["seconds_per_sample"].get<double>(), truth_.c, 1e-9);
  EXPECT_NEAR(p["compute"]["seconds_per_step"].get<double>(), truth_.o, 1e-9);
  // 5 batch sizes × K = 1, 2, 4, 8, but B=32 on 8 ranks (4 per rank) is below the smallest local
  // batch measured (8: B=32 on 4 ranks) and was not run, so it is not projected.
  EXPECT_EQ(p["min_local_batch"].get<double>(), 8);
  EXPECT_EQ(p["points"].size(), 5u * 4u - 1u);
  // Exact synthetic timings: the model reproduces every measured configuration, also held out.
  const auto& check = p["check"];
  EXPECT_TRUE(check["goal_met"].get<bool>()) << check.dump(2);
  EXPECT_EQ(check["held_out"], 15) << check.dump(2);  // 5 batch sizes x K = 1, 2, 4
  EXPECT_LT(check["held_out_max_error"].get<double>(), 1e-6) << check.dump(2);
  EXPECT_LT(check["fitted_max_error"].get<double>(), 1e-6) << check.dump(2);
}

TEST_F(AnalyzeCliTest, ParetoListsFrontierRuns) {
  nlohmann::json j = Json("analyze pareto --sweep synthetic");
  const auto& f = j["pareto"]["frontier"];
  ASSERT_FALSE(f.empty());
  // Every run stored flops_per_step = 6 P B on its start line: the frontier is in FLOPs.
  EXPECT_EQ(j["pareto"]["compute_unit"], "FLOPs");
  for (const auto& run : f) {
    const double flops = SyntheticSweep::FlopsPerStep(truth_, run["batch_size"].get<int64_t>());
    EXPECT_DOUBLE_EQ(run["compute"].get<double>(), run["step"].get<double>() * flops);
    EXPECT_DOUBLE_EQ(run["rank_seconds"].get<double>(),
                     run["seconds"].get<double>() * run["world_size"].get<double>());
  }
  for (size_t i = 1; i < f.size(); ++i) {
    EXPECT_LE(f[i - 1]["seconds"].get<double>(), f[i]["seconds"].get<double>());
    EXPECT_GT(f[i - 1]["compute"].get<double>(), f[i]["compute"].get<double>());
  }
}

// The synthetic sweep tried lr.base 0.05 and 0.1 and 0.1 is faster at every batch size: every
// best LR is the largest tried, so the LR law says the optimum lies beyond the grid (no law).
TEST_F(AnalyzeCliTest, LrReportsEachBestLrAndNoLawWhenEveryOptimumIsAtTheGridsEdge) {
  nlohmann::json j = Json("analyze lr --sweep synthetic --resamples 100");
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["analysis"], "lr");
  EXPECT_EQ(j["lr"]["path"], "lr.base");
  ASSERT_FALSE(j["lr"]["laws"].empty());
  for (const auto& law : j["lr"]["laws"]) {
    EXPECT_FALSE(law["fitted"].get<bool>());
    EXPECT_TRUE(law["alpha"]["value"].is_null());
    for (const auto& b : law["per_batch_size"]) {
      if (!b["reached"].get<bool>()) continue;
      EXPECT_EQ(b["grid_best_lr"].get<double>(), 0.1) << b.dump();
      EXPECT_TRUE(b["at_high_edge"].get<bool>()) << b.dump();
    }
  }
  Result r = Analyze("analyze lr --sweep synthetic --resamples 100");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("No LR law"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("largest LR tried"), std::string::npos) << r.out;
  r = Analyze("analyze lr --sweep synthetic --resamples 100 --format csv");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.rfind("others,batch_size,lrs,seeds,best_lr", 0), 0u) << r.out;
  r = Analyze("analyze lr --sweep synthetic --confidence 2");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("--confidence"), std::string::npos) << r.out;
}

TEST_F(AnalyzeCliTest, BadInputExitsTwoNamingTheFlag) {
  Result r = Analyze("analyze crit --sweep nosuch");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("sweep 'nosuch' is not in"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("synthetic"), std::string::npos) << r.out;

  r = Analyze("analyze crit --sweep synthetic --target 'accuracy=0.9'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("--target"), std::string::npos) << r.out;

  r = Analyze("analyze project --sweep synthetic --profile myrinet");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("ib-100g"), std::string::npos) << r.out;

  r = Analyze("analyze gns --sweep synthetic --format xml");
  EXPECT_EQ(r.exit_code, 2);
  r = Analyze("analyze gns --sweep synthetic --beta 1.5");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("--beta"), std::string::npos) << r.out;

  r = RunCli("--db " + dir_->File("absent.db") + " analyze gns --sweep synthetic");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_FALSE(std::filesystem::exists(dir_->File("absent.db")));
}

TEST_F(AnalyzeCliTest, ReportWritesItsFilesAndRefusesBadInput) {
  const std::string out = dir_->File("report-out");
  Result r = Analyze("report --sweep synthetic --resamples 100 --out " + out);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(std::filesystem::exists(out + "/report.html"));
  EXPECT_TRUE(std::filesystem::exists(out + "/report.md"));
  EXPECT_TRUE(std::filesystem::exists(out + "/critical_batch.csv"));
  // The sweep tried two LRs per batch size: the report has the learning-rate law's section.
  EXPECT_TRUE(std::filesystem::exists(out + "/lr_law.csv"));
  std::ifstream md(out + "/report.md");
  const std::string text((std::istreambuf_iterator<char>(md)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("## Learning-rate law"), std::string::npos);

  const std::string bad = dir_->File("report-bad");
  r = Analyze("report --sweep synthetic --profile nowhere --out " + bad);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("--profile"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(bad));  // nothing written on bad input
}

}  // namespace
}  // namespace batchlab::analysis
