// The report's Vega-Lite charts on the synthetic sweep (30 runs: 28 reach the target, the B=512
// lr=0.05 K=4 run diverges at step 5, B=32 lr=0.05 K=4 is pending; gns_* logged for K > 1):
// every run is drawn (no cap), runs that never reached the target are drawn as such, points
// carry run and config for the hover, and each chart has a reading from the numbers.
#include "analysis/report/report_charts.h"

#include <cmath>
#include <cstdlib>
#include <functional>
#include <optional>
#include <set>

#include <gtest/gtest.h>

#include "analysis/data/sweep_data.h"
#include "tests/support/synthetic_sweep.h"

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
      "curve_lr",        "gns",    "lr_law",     "scaling",    "projection"};
  std::vector<std::string> got;
  for (const Chart& c : StudyCharts(*study_)) got.push_back(c.id);
  EXPECT_EQ(got, want);
  for (const auto& [id, c] : charts_) {
    EXPECT_FALSE(c.reading.empty()) << id;
    EXPECT_EQ(c.reading.back(), '.') << id;
    EXPECT_EQ(c.reading.find("nan"), std::string::npos) << id << ": " << c.reading;
  }
  EXPECT_NE(
      charts_.at("steps_to_target").reading.find(ProseNumber(study_->crit.fit.b_crit.value)),
      std::string::npos)
      << charts_.at("steps_to_target").reading;
}

TEST_F(ReportChartsTest, TheLrChartDrawsBestLrsAtTheGridsEdgeOpenAndNoLaw) {
  // lr.base 0.05 and 0.1, 0.1 fastest at every batch size: every best at the upper edge.
  EXPECT_EQ(Layer("lr_law", "points")["transform"][0]["filter"], "datum.filled");
  const json& values = Layer("lr_law", "edge_points")["data"]["values"];
  ASSERT_FALSE(values.empty());
  for (const json& v : values) {
    EXPECT_FALSE(v["filled"].get<bool>());
    EXPECT_DOUBLE_EQ(v["lr"].get<double>(), 0.1);  // exp(ln 0.1): within 4 ulps
    EXPECT_EQ(v["where"], "optimum at or above the largest LR tried");
  }
  for (const json& l : charts_.at("lr_law").spec["layer"]) EXPECT_NE(l["name"], "law");
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

TEST_F(ReportChartsTest, BCritIsMarkedOnTheStepsChartWithItsInterval) {
  // It was only in the caption.
  const CritFit& f = study_->crit.fit;
  const json& rule = Layer("steps_to_target", "b_crit");
  EXPECT_EQ(rule["mark"]["type"], "rule");
  EXPECT_DOUBLE_EQ(rule["data"]["values"][0]["b_crit"].get<double>(), f.b_crit.value);
  const json& band = Layer("steps_to_target", "b_crit_interval");
  EXPECT_EQ(band["mark"]["type"], "rect");
  EXPECT_DOUBLE_EQ(band["data"]["values"][0]["low"].get<double>(), f.b_crit.low);
  EXPECT_DOUBLE_EQ(band["data"]["values"][0]["high"].get<double>(), f.b_crit.high);
}

TEST_F(ReportChartsTest, OneColourPerBatchSizeAcrossTheReport) {
  // Every colour scale by batch size has the same domain (every batch size of the study), so a
  // batch size has the same colour in every chart; each chart's own domain shifted them.
  std::vector<json> domains;
  std::function<void(const json&)> visit = [&](const json& j) {
    if (j.is_object()) {
      if (j.contains("color") && j["color"].is_object() &&
          j["color"].value("field", "") == "batch_size") {
        domains.push_back(j["color"]["scale"]["domain"]);
      }
      for (const auto& [k, v] : j.items()) visit(v);
    } else if (j.is_array()) {
      for (const json& v : j) visit(v);
    }
  };
  for (const auto& [id, c] : charts_) visit(c.spec);
  ASSERT_GE(domains.size(), 5u);
  std::set<int64_t> batches;
  for (const TargetHit& h : study_->target.hits) batches.insert(h.batch_size);
  for (const json& d : domains) {
    EXPECT_EQ(d, domains.front());
    for (int64_t b : batches) {
      EXPECT_NE(std::find(d.begin(), d.end(), json(b)), d.end()) << b << " not in " << d.dump();
    }
  }
}

TEST_F(ReportChartsTest, PrunedAndStalledRunsAreDrawnAsTheSubtitlePromises) {
  // The subtitle promises open triangles for runs that stopped without reaching the target; a
  // pruned run was not drawn at all.
  std::set<std::string> stopped;
  int n = 0;
  for (TargetHit& h : study_->target.hits) {
    if (h.status != HitStatus::kReached || n >= 2) continue;
    h.status = n++ == 0 ? HitStatus::kPruned : HitStatus::kStalled;
    stopped.insert(h.run_id);
  }
  ASSERT_EQ(stopped.size(), 2u);
  std::optional<Chart> steps;
  for (Chart& c : StudyCharts(*study_)) {
    if (c.id == "steps_to_target") steps = std::move(c);
  }
  ASSERT_TRUE(steps);
  std::set<std::string> drawn;
  for (const json& l : steps->spec["layer"]) {
    if (l.value("name", "") != "not_reached") continue;
    for (const json& v : l["data"]["values"]) {
      drawn.insert(v["run"].get<std::string>());
      if (stopped.count(v["run"].get<std::string>())) {
        EXPECT_TRUE(v["kind"].get<std::string>().rfind("pruned", 0) == 0 ||
                    v["kind"].get<std::string>().rfind("stalled", 0) == 0)
            << v.dump();
      }
    }
  }
  for (const std::string& id : stopped) EXPECT_TRUE(drawn.count(id)) << id << " not drawn";
}

TEST_F(ReportChartsTest, RankCountsAreEncodedByShapeAndDash) {
  // K was encoded in no chart: the runs' three rank counts (1, 2, 4) now have a shape (points)
  // or a dash (lines), with one domain across the report: the runs' and the projection's rank
  // counts together (they fit the 8 shapes), increasing.
  std::set<int> all = {1, 2, 4};
  for (const ProjectedPoint& p : study_->projection.points) all.insert(p.world_size);
  ASSERT_LE(all.size(), 8u);
  const json ks = json(std::vector<int>(all.begin(), all.end()));
  for (const auto& [chart, layer] : std::vector<std::pair<std::string, std::string>>{
           {"steps_to_target", "reached"}, {"steps_to_target", "not_reached"},
           {"pareto", "runs"}, {"pareto", "not_reached"}}) {
    const json& shape = Layer(chart, layer)["encoding"]["shape"];
    EXPECT_EQ(shape["field"], "K") << chart << " " << layer;
    EXPECT_EQ(shape["scale"]["domain"], ks) << chart << " " << layer;
  }
  EXPECT_EQ(Layer("steps_to_target", "not_reached")["mark"]["filled"], false);
  for (const char* id : {"curve_loss", "gns"}) {
    const json& spec = charts_.at(id).spec;
    EXPECT_EQ(spec["encoding"]["strokeDash"]["field"], "K") << id;
    EXPECT_EQ(spec["encoding"]["strokeDash"]["scale"]["domain"], ks) << id;
    EXPECT_EQ(spec["transform"][0]["from"]["fields"], json({"config", "batch_size", "K"})) << id;
  }
  // The best run per batch size is ringed (it was a shape, which K now uses).
  EXPECT_EQ(Layer("steps_to_target", "best")["data"]["values"].size(), 5u);
  // The batch-size axis is ticked at the study's batch sizes, written in full.
  EXPECT_EQ(Layer("steps_to_target", "reached")["encoding"]["x"]["axis"]["values"],
            json({32, 64, 128, 256, 512}));
}

TEST_F(ReportChartsTest, CurvesAreDrawnOverSamplesWithAStepToggle) {
  // Only a step axis: a 480-step B=16 run squeezed every large-batch run into its first steps.
  for (const char* id : {"curve_loss", "curve_test_accuracy", "gns"}) {
    const json& spec = charts_.at(id).spec;
    EXPECT_EQ(spec["encoding"]["x"]["field"], "samples") << id;
    const json& axes = spec["usermeta"]["x_axes"];
    ASSERT_EQ(axes.size(), 2u) << id;
    EXPECT_EQ(axes[0]["name"], "samples");
    EXPECT_EQ(axes[1]["name"], "step");
    EXPECT_EQ(axes[1]["x"]["field"], "step");
  }
  // Each point's samples are what its run logged: step × B in the synthetic sweep.
  std::map<std::string, int64_t> batch;
  for (const RunCurves& r : study_->curves.runs) batch[r.run_id] = r.batch_size;
  for (const json& v : charts_.at("curve_loss").spec["data"]["values"]) {
    EXPECT_EQ(v["samples"].get<double>(),
              static_cast<double>(v["step"].get<int64_t>() * batch[v["run"].get<std::string>()]));
  }
}

TEST(SeenAtTest, LoggedSamplesInterpolatedElseStepTimesBatch) {
  RunCurves r;
  r.batch_size = 100;
  EXPECT_EQ(r.SeenAt(7), 700);  // nothing logged
  r.samples = Series{{2, 4}, {150, 350}};  // e.g. a sync mode that applied fewer samples
  EXPECT_EQ(r.SeenAt(2), 150);
  EXPECT_EQ(r.SeenAt(3), 250);  // between logged steps
  EXPECT_EQ(r.SeenAt(6), 550);  // past the last: + B per step
  EXPECT_EQ(r.SeenAt(1), 75);   // before the first: in proportion
  r.tokens_per_sample = 128;    // a language model's sweep
  EXPECT_EQ(r.SeenAt(4), 350 * 128);
}

// The frontier labels of a time-vs-compute chart, as the browser draws them: each centred at
// (label_x, label_y) on the chart's explicit log domains, 11 px text.
void ExpectLabelsApart(const json& spec) {
  const json* labels = nullptr;
  const json* x = nullptr;
  const json* y = nullptr;
  for (const json& l : spec["layer"]) {
    if (l.value("name", "") == "labels") labels = &l;
    if (l.value("name", "") == "frontier") {
      x = &l["encoding"]["x"];
      y = &l["encoding"]["y"];
    }
  }
  ASSERT_NE(labels, nullptr);
  ASSERT_NE(x, nullptr);
  const double x0 = (*x)["scale"]["domain"][0], x1 = (*x)["scale"]["domain"][1];
  const double y0 = (*y)["scale"]["domain"][0], y1 = (*y)["scale"]["domain"][1];
  EXPECT_EQ((*x)["scale"]["nice"], false);
  struct B {
    double l, t, r, b;
  };
  std::vector<B> boxes;
  for (const json& v : labels->at("data")["values"]) {
    const double px = 620 * std::log(v["label_x"].get<double>() / x0) / std::log(x1 / x0);
    const double py = 320 * (1 - std::log(v["label_y"].get<double>() / y0) / std::log(y1 / y0));
    const double w = 7.0 * static_cast<double>(v["tag"].get<std::string>().size());
    EXPECT_GT(px - w / 2, 0) << v.dump();
    EXPECT_LT(px + w / 2, 620) << v.dump();
    EXPECT_GT(py, 6) << v.dump();
    EXPECT_LT(py, 314) << v.dump();
    boxes.push_back({px - w / 2, py - 6, px + w / 2, py + 6});
  }
  for (size_t i = 0; i < boxes.size(); ++i) {
    for (size_t j = i + 1; j < boxes.size(); ++j) {
      const bool apart = boxes[i].r <= boxes[j].l || boxes[j].r <= boxes[i].l ||
                         boxes[i].b <= boxes[j].t || boxes[j].b <= boxes[i].t;
      EXPECT_TRUE(apart) << "labels " << i << " and " << j << " overlap";
    }
  }
}

TEST_F(ReportChartsTest, FrontierLabelsArePlacedApartInsideThePlot) {
  // They were all drawn 7 px up and right of their points, on top of each other.
  ExpectLabelsApart(charts_.at("pareto").spec);
  ExpectLabelsApart(charts_.at("projection").spec);
  EXPECT_GE(Layer("pareto", "labels")["data"]["values"].size() * 2,
            study_->pareto.frontier.size());
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
