// The report's Vega-Lite charts on the synthetic sweep (30 runs: 28 reach the target, the B=512
// lr=0.05 K=4 run diverges at step 5, B=32 lr=0.05 K=4 is pending; gns_* logged for K > 1):
// every run is drawn (no cap), runs that never reached the target are drawn as such, points
// carry run and config for the hover, and each chart has a reading from the numbers.
#include "analysis/report_charts.h"

#include <cstdlib>
#include <set>

#include <gtest/gtest.h>

#include "analysis/sweep_data.h"
#include "tests/analysis/synthetic_sweep.h"

namespace batchlab::analysis {
namespace {

using nlohmann::json;
using testing::TempDir;

class ReportChartsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = dir_.File("batchlab.db");
    testing::WriteSyntheticSweep(db_, dir_.path());
    StatusOr<SweepData> sweep = LoadSweep(db_, "synthetic", LoadOptions{});
    ASSERT_TRUE(sweep.ok()) << sweep.status().message();
    StudyOptions opt;
    opt.resamples = 100;
    StatusOr<Study> study = RunStudy(*sweep, opt);
    ASSERT_TRUE(study.ok()) << study.status().message();
    study_ = std::make_unique<Study>(std::move(*study));
    for (Chart& c : StudyCharts(*study_)) charts_[c.id] = std::move(c);
  }

  const json& Layer(const std::string& chart, const std::string& name) {
    for (const json& l : charts_.at(chart).spec["layer"]) {
      if (l.value("name", "") == name) return l;
    }
    ADD_FAILURE() << chart << " has no layer " << name;
    static const json kEmpty = json::object();
    return kEmpty;
  }

  static std::set<std::string> Runs(const json& values) {
    std::set<std::string> runs;
    for (const json& v : values) runs.insert(v["run"].get<std::string>());
    return runs;
  }

  TempDir dir_;
  std::string db_;
  std::unique_ptr<Study> study_;
  std::map<std::string, Chart> charts_;
};

TEST_F(ReportChartsTest, HasEveryChartInOrderWithAReading) {
  const std::vector<std::string> want = {
      "steps_to_target", "pareto", "curve_loss", "curve_test_loss", "curve_test_accuracy",
      "curve_lr",        "gns",    "scaling",    "projection"};
  std::vector<std::string> got;
  for (const Chart& c : StudyCharts(*study_)) got.push_back(c.id);
  EXPECT_EQ(got, want);
  for (const auto& [id, c] : charts_) {
    EXPECT_FALSE(c.reading.empty()) << id;
    EXPECT_EQ(c.reading.back(), '.') << id;
    EXPECT_EQ(c.reading.find("nan"), std::string::npos) << id << ": " << c.reading;
  }
  EXPECT_NE(
      charts_.at("steps_to_target").reading.find(FormatNumber(study_->crit.fit.b_crit.value, 3)),
      std::string::npos)
      << charts_.at("steps_to_target").reading;
}

TEST_F(ReportChartsTest, StepsChartDrawsReachedAndNotReachedRuns) {
  EXPECT_EQ(Layer("steps_to_target", "reached")["data"]["values"].size(), 28u);
  const json& missed = Layer("steps_to_target", "not_reached")["data"]["values"];
  ASSERT_EQ(missed.size(), 1u);
  EXPECT_EQ(missed[0]["steps"], 5);  // the diverged run, at its last step
  EXPECT_EQ(missed[0]["batch_size"], 512);
  EXPECT_NE(missed[0]["kind"].get<std::string>().find("diverged"), std::string::npos);
  EXPECT_EQ(Layer("steps_to_target", "fit")["data"]["values"].size(), 61u);
}

TEST_F(ReportChartsTest, ParetoLabelsEveryFrontierPointAndHoverNamesRunAndConfig) {
  const json& runs = Layer("pareto", "runs");
  EXPECT_EQ(runs["data"]["values"].size(), 28u);
  EXPECT_EQ(Layer("pareto", "labels")["data"]["values"].size(), study_->pareto.frontier.size());
  std::set<std::string> tooltip;
  for (const json& t : runs["encoding"]["tooltip"]) tooltip.insert(t["field"].get<std::string>());
  EXPECT_TRUE(tooltip.count("run") && tooltip.count("config"));
  EXPECT_EQ(runs["params"][0]["bind"], "legend");
  EXPECT_EQ(Layer("pareto", "not_reached")["data"]["values"].size(), 1u);
}

TEST_F(ReportChartsTest, CurvesDrawEveryRunWithoutACap) {
  // 29 runs logged metrics (one is pending); all of them, far more than the old cap of 8.
  for (const char* id : {"curve_loss", "curve_test_loss", "curve_test_accuracy", "curve_lr"}) {
    const json& spec = charts_.at(id).spec;
    EXPECT_EQ(Runs(spec["data"]["values"]).size(), 29u) << id;
    EXPECT_EQ(spec["transform"][0]["from"]["data"]["values"].size(), 29u) << id;
    EXPECT_EQ(spec["encoding"]["detail"]["field"], "run") << id;
  }
  // The LR actually used: lr.base of each run (rule none), 0.05 and 0.1.
  EXPECT_NE(charts_.at("curve_lr").reading.find("0.05"), std::string::npos);
  EXPECT_NE(charts_.at("curve_lr").reading.find("0.1 "), std::string::npos);
  // B_simple: the 19 runs with K > 1 that ran.
  EXPECT_EQ(Runs(charts_.at("gns").spec["data"]["values"]).size(), 19u);
}

TEST_F(ReportChartsTest, HtmlInlinesTheLibraryOrSaysHowToInstallIt) {
  const std::string html = RenderHtml(*study_);
  EXPECT_NE(html.find("vegaEmbed"), std::string::npos);
  const size_t data = html.find("id=\"batchlab-charts\">");
  ASSERT_NE(data, std::string::npos);
  EXPECT_LT(html.find("</script>", data), html.find("<h2>Results</h2>", data));

  setenv("BATCHLAB_WEB_MODULES", dir_.File("no_such_folder").c_str(), 1);
  const std::string bare = RenderHtml(*study_);
  unsetenv("BATCHLAB_WEB_MODULES");
  EXPECT_NE(bare.find("scripts/install-web-deps.sh"), std::string::npos);
  EXPECT_NE(bare.find("<h2>Results</h2>"), std::string::npos);  // tables still there
}

TEST(ThinTest, KeepsFirstAndLastAndAtMostMaxPoints) {
  Series s;
  for (int i = 0; i < 1000; ++i) {
    s.steps.push_back(i + 1);
    s.values.push_back(i);
  }
  Series t = Thin(s, 300);
  EXPECT_EQ(t.size(), 300u);
  EXPECT_EQ(t.steps.front(), 1);
  EXPECT_EQ(t.steps.back(), 1000);
  EXPECT_EQ(Thin(t, 300).size(), 300u);
  EXPECT_EQ(Thin(s, 5000).size(), 1000u);
}

}  // namespace
}  // namespace batchlab::analysis
