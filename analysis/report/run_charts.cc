// Per-run curves and the noise scale per run (see run_charts.h).
#include "analysis/report/run_charts.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>

#include <fmt/core.h>

#include "analysis/data/table.h"
#include "analysis/report/chart_encoding.h"

namespace batchlab::analysis::charts {

std::optional<Chart> CurveChart(const Study& s, const CurveInfo& info) {
  json rows = json::array(), labels = json::array();
  int runs = 0;
  double first_max = 0;  // the largest first value: the y range of a loss chart stops there
  std::map<int64_t, std::pair<double, double>> final_by_batch;  // best final value per batch
  const bool higher_better = std::string(info.metric) == "test_accuracy";
  double lo = 1e300, hi = -1e300;
  int64_t lo_b = 0, hi_b = 0;
  for (const RunCurves& r : s.curves.runs) {
    const Series* series = r.Find(info.metric);
    if (series == nullptr) continue;
    int drawn = 0;
    for (size_t i = 0; i < series->size(); ++i) {
      const double v = series->values[i];
      if (!std::isfinite(v) || (info.log_y && v <= 0)) continue;
      if (drawn == 0) first_max = std::max(first_max, v);
      rows.push_back({{"run", r.run_id},
                      {"step", series->steps[i]},
                      {s.curves.seen_unit, r.SeenAt(series->steps[i])},
                      {"value", v}});
      ++drawn;
      if (v < lo) lo = v, lo_b = r.batch_size;
      if (v > hi) hi = v, hi_b = r.batch_size;
    }
    if (drawn == 0) continue;
    ++runs;
    labels.push_back(RunRow(r.run_id, r.label, r.batch_size, r.world_size));
    const double last = series->values.back();
    if (std::isfinite(last)) {
      auto [it, fresh] = final_by_batch.try_emplace(r.batch_size, last, last);
      if (!fresh) {
        it->second.first = std::min(it->second.first, last);
        it->second.second = std::max(it->second.second, last);
      }
    }
  }
  if (runs == 0) return std::nullopt;
  Chart c{std::string("curve_") + info.metric, info.title, "", {}};
  const json dash = DashByRanks(s);
  json spec = Base(c.title, fmt::format("{} runs, one line each, coloured by batch size{}; click a "
                                        "legend entry to show only that batch size",
                                        runs, dash.is_null() ? "" : ", dashed by ranks (K)"));
  json y = Quant("value", info.axis, info.log_y);
  if (info.log_y && std::string(info.metric) == "loss" && hi > 4 * first_max) {
    // A diverging run would flatten every other curve: the axis stops at the largest initial loss
    // and the line leaves the chart (clipped) instead.
    y["scale"]["domain"] = {lo, first_max * 1.5};
    spec["title"]["subtitle"] = json::array(
        {spec["title"]["subtitle"],
         "the axis stops at 1.5x the largest initial loss (diverging runs leave the chart)"});
  }
  // Clipped: a diverging run's line leaves the chart where the axis stops.
  RunLines(s, rows, labels, y, {{"type", "line"}, {"clip", true}, {"strokeWidth", 1.5}}, dash,
           "curves", spec);
  c.spec = spec;
  if (std::string(info.metric) == "lr") {
    c.reading =
        fmt::format("The learning rate used ranges from {} (B={}) to {} (B={}) across {} runs.",
                    ProseNumber(lo), lo_b, ProseNumber(hi), hi_b, runs);
  } else {
    // The final value of the best run per batch size, smallest and largest batch.
    const auto& [b0, v0] = *final_by_batch.begin();
    const auto& [b1, v1] = *final_by_batch.rbegin();
    const double best0 = higher_better ? v0.second : v0.first;
    const double best1 = higher_better ? v1.second : v1.first;
    c.reading = final_by_batch.size() > 1
                    ? fmt::format("The best final {} is {} at B={} and {} at B={} ({} runs).",
                                  info.axis, ProseNumber(best0), b0, ProseNumber(best1), b1, runs)
                    : fmt::format("The best final {} is {} at B={} ({} runs).", info.axis,
                                  ProseNumber(best0), b0, runs);
  }
  return c;
}

std::optional<Chart> GnsChart(const Study& s) {
  json rows = json::array(), labels = json::array();
  int runs = 0;
  for (const GnsRun& r : s.gns.runs) {
    int drawn = 0;
    const RunCurves* curves = CurvesOf(s, r.run_id);
    for (const GnsPoint& p : r.series) {
      if (!Positive(p.b_simple)) continue;
      rows.push_back({{"run", r.run_id},
                      {"step", p.step},
                      {s.curves.seen_unit,
                       curves != nullptr ? curves->SeenAt(p.step)
                                         : static_cast<double>(p.step * r.batch_size)},
                      {"b_simple", p.b_simple}});
      ++drawn;
    }
    if (drawn == 0) continue;
    ++runs;
    labels.push_back(RunRow(r.run_id, r.label, r.batch_size, r.world_size));
  }
  if (runs == 0) return std::nullopt;
  Chart c{"gns", "Smoothed B_simple over training", "", {}};
  const json dash = DashByRanks(s);
  json spec = Base(c.title, fmt::format("ratio of the debiased EMAs (beta = {}) of tr(Sigma) and "
                                        "|G|^2; {} runs, one line each{}",
                                        s.options.beta, runs,
                                        dash.is_null() ? "" : ", dashed by ranks (K)"));
  RunLines(s, rows, labels, Quant("b_simple", "B_simple (samples)", true),
           {{"type", "line"}, {"strokeWidth", 1.5}}, dash, "series", spec);
  c.spec = spec;
  if (s.gns.median) {
    c.reading = fmt::format(
        "Over the estimation window the per-run B_simple has median {} (range "
        "{} to {}){}.",
        ProseNumber(*s.gns.median), ProseNumber(*s.gns.min), ProseNumber(*s.gns.max),
        s.crit.b_simple_ratio
            ? fmt::format(", {}x the fitted B_crit", ProseNumber(*s.crit.b_simple_ratio))
            : "");
  } else {
    c.reading = fmt::format(
        "{} runs logged the noise scale, but no window estimate was possible "
        "(see the table).",
        runs);
  }
  return c;
}

}  // namespace batchlab::analysis::charts
