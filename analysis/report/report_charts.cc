// Vega-Lite charts of a study (see report_charts.h): the strong-scaling chart, and the report's
// order of every chart. The shared encodings and series are chart_encoding.h, label placement
// chart_labels.h, the target charts target_charts.h, the per-run line charts run_charts.h.
#include "analysis/report/report_charts.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <fmt/format.h>

#include "analysis/data/table.h"
#include "analysis/report/chart_encoding.h"
#include "analysis/report/lr_chart.h"
#include "analysis/report/run_charts.h"
#include "analysis/report/target_charts.h"
#include "base/run_protocol.h"


namespace batchlab::analysis {
namespace charts {
namespace {

std::optional<Chart> ScalingChart(const Study& s) {
  json rows = json::array();
  std::vector<int> ks;
  int hidden = 0;
  for (const ScalingRow& r : s.scaling.strong) {
    // Not results: no baseline under the same conditions, or above 100% beyond the interval.
    if (!r.incomparable.empty() || r.above_possible) {
      ++hidden;
      continue;
    }
    if (std::find(ks.begin(), ks.end(), r.world_size) == ks.end()) ks.push_back(r.world_size);
    const int64_t batch = r.group.rfind("B=", 0) == 0 ? std::atoll(r.group.c_str() + 2) : 0;
    rows.push_back({{"group", r.group},
                    {"K", r.world_size},
                    {"batch_size", batch},
                    {"nodes", r.nodes},
                    {"efficiency", r.efficiency},
                    {"low", r.efficiency_interval.available() ? r.efficiency_interval.low
                                                               : r.efficiency},
                    {"high", r.efficiency_interval.available() ? r.efficiency_interval.high
                                                                : r.efficiency},
                    {"speedup", r.speedup},
                    {"throughput", r.throughput},
                    {"comm_fraction", r.comm_fraction},
                    {"runs", r.runs}});
  }
  if (rows.empty()) return std::nullopt;
  Chart c{"scaling", "Strong scaling efficiency (fixed global batch)", "", {}};
  json spec = Base(c.title, "efficiency = speedup / (K / K0) of measured throughput; 1 = perfect");
  json x = Quant("K", "ranks (K)", true);
  x["scale"]["base"] = 2;
  std::sort(ks.begin(), ks.end());
  x["axis"] = {{"values", ks}};
  json enc = {{"x", x},
              {"y", Quant("efficiency", "parallel efficiency", false)},
              {"color", ColorByBatch(s)},
              {"opacity", ToggledOpacity(0.1)},
              {"tooltip", json::array({{{"field", "group"}},
                                       {{"field", "K"}, {"title", "ranks"}},
                                       {{"field", "efficiency"}, {"format", ".3f"}},
                                       {{"field", "speedup"}, {"format", ".3f"}},
                                       {{"field", "throughput"}, {"title", "samples/s"}},
                                       {{"field", "comm_fraction"}, {"format", ".2f"}}})}};
  spec["data"] = {{"values", rows}};
  json bars = {{"x", x},
               {"y", Quant("low", "parallel efficiency", false)},
               {"y2", {{"field", "high"}}},
               {"color", ColorByBatch(s)}};
  spec["layer"] = json::array({{{"name", "intervals"}, {"mark", {{"type", "rule"}}}, {"encoding", bars}},
                               {{"name", "lines"}, {"mark", {{"type", "line"}}}, {"encoding", enc}},
                               {{"name", "points"},
                                {"params", LegendToggle()},
                                {"mark", {{"type", "point"}, {"filled", true}, {"size", 60}}},
                                {"encoding", enc}}});
  const ScalingRow* worst = nullptr;
  for (const ScalingRow& r : s.scaling.strong) {
    if (!r.incomparable.empty() || r.above_possible) continue;
    if (r.world_size > 1 && (worst == nullptr || r.efficiency < worst->efficiency)) worst = &r;
  }
  bool comm_logged = false;
  for (const RunTiming& t : s.scaling.timings) comm_logged = comm_logged || t.comm_seconds > 0;
  const std::string comm =
      worst == nullptr ? ""
      : comm_logged    ? fmt::format(", where communication takes {}% of a step",
                                     ProseNumber(100 * worst->comm_fraction))
                       : ", where communication was not measured (no run logged comm_seconds)";
  // The rank counts measured per batch size: "only one" is said only when it is true (a 1- and
  // 2-rank study whose K=2 rows were all left out measured two).
  std::map<std::string, std::set<int>> counts;
  std::set<int> all_counts;
  for (const ScalingRow& r : s.scaling.strong) {
    counts[r.group].insert(r.world_size);
    if (r.base_world_size > 0) counts[r.group].insert(r.base_world_size);
    all_counts.insert(r.world_size);
  }
  bool several = false;
  for (const auto& [group, measured] : counts) several = several || measured.size() > 1;
  std::vector<std::string> ks_text;
  for (int k : all_counts) ks_text.push_back(std::to_string(k));
  c.reading = worst != nullptr
                  ? fmt::format(
                        "The lowest efficiency is {} at K={} ({}){}; the vertical bars are "
                        "95% intervals from the step-time distributions.",
                        ProseNumber(worst->efficiency), worst->world_size, worst->group, comm)
              : several ? fmt::format("Rank counts {} were measured, but no efficiency at K > 1 "
                                      "is a result.",
                                      fmt::join(ks_text, ", "))
                        : "Only one rank count was measured per batch size.";
  if (hidden > 0) {
    c.reading += fmt::format(
        " {} estimate(s) are left out as not results (above 100% beyond their interval, or "
        "without a baseline under the same conditions; see the scaling table).",
        hidden);
  }
  c.spec = spec;
  return c;
}

}  // namespace
}  // namespace charts

std::vector<Chart> StudyCharts(const Study& s) {
  std::vector<Chart> out;
  auto add = [&out](std::optional<Chart> c) {
    if (c) out.push_back(std::move(*c));
  };
  using charts::CurveChart;
  add(charts::StepsChart(s));
  add(charts::ParetoChart(s));
  add(CurveChart(s, {protocol::kMetricLoss, "Training loss per run", "training loss", true}));
  add(CurveChart(s, {protocol::kMetricTestLoss, "Test loss per run", "test loss", true}));
  add(CurveChart(s,
                 {protocol::kMetricTestAccuracy, "Test accuracy per run", "test accuracy", false}));
  add(CurveChart(s, {"lr", "Learning rate used per run (the lr metric)", "learning rate", false}));
  add(charts::GnsChart(s));
  add(charts::LrLawChart(s));
  add(charts::ScalingChart(s));
  add(charts::ProjectionChart(s));
  return out;
}

}  // namespace batchlab::analysis
