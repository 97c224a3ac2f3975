// Steps to target, the Pareto frontier and the projection (see target_charts.h).
#include "analysis/report/target_charts.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "analysis/data/table.h"
#include "analysis/report/chart_encoding.h"
#include "analysis/report/chart_labels.h"

namespace batchlab::analysis::charts {

std::optional<Chart> StepsChart(const Study& s) {
  if (!s.target_status.ok() || s.target.hits.empty()) return std::nullopt;
  std::map<std::string, bool> best;
  for (const BatchBest& b : s.target.best) {
    if (b.best) best[b.best->run_id] = true;
  }
  json reached = json::array(), missed = json::array();
  for (const TargetHit& h : s.target.hits) {
    json row = RunRow(h.run_id, h.label, h.batch_size, h.world_size);
    if (h.status == HitStatus::kReached) {
      row["steps"] = h.step;
      row["kind"] = best.count(h.run_id) ? "best at its batch size" : "reached";
      reached.push_back(row);
    } else if (h.status == HitStatus::kNeverReached || h.status == HitStatus::kDiverged ||
               h.status == HitStatus::kFailed || h.status == HitStatus::kPruned ||
               h.status == HitStatus::kStalled) {
      const RunCurves* c = CurvesOf(s, h.run_id);
      if (c == nullptr || c->last_step <= 0) continue;
      row["steps"] = c->last_step;
      row["kind"] = NotReachedStatus(h.status) + " (at its last step)";
      missed.push_back(row);
    }
  }
  if (reached.empty() && missed.empty()) return std::nullopt;
  Chart c{"steps_to_target", "Steps to target vs batch size", "", {}};
  const json shape = ShapeByRanks(s);
  json spec = Base(
      c.title,
      "target " + s.target.target.ToString() + "; ringed: the best configuration per batch size" +
          (shape.is_null() ? "" : "; shape: ranks (K)") +
          (shape.is_null() ? "\nopen triangles" : "\nfilled: reached it; open") +
          ": runs that stopped without reaching it (never reached, diverged, failed, pruned, "
          "stalled)");
  json x = BatchAxis(s, "batch_size");
  json y = Quant("steps", "steps", true);
  json layers = json::array();
  layers.push_back(PointSeries(s, "reached", reached, 70, x, y,
                               Tooltip({{"steps", "steps to target"}, {"kind", "status"}}), shape));
  json best_rows = json::array();
  for (const json& r : reached) {
    if (r["kind"] == "best at its batch size") best_rows.push_back(r);
  }
  if (!best_rows.empty()) {
    // A ring around the best run of each batch size (its legend entry says so).
    layers.push_back(
        {{"name", "best"},
         {"data", {{"values", best_rows}}},
         {"mark", {{"type", "point"}, {"shape", "circle"}, {"filled", false}, {"size", 260},
                   {"strokeWidth", 1.5}}},
         {"encoding",
          {{"x", x},
           {"y", y},
           {"stroke",
            {{"datum", "best at its batch size"},
             {"type", "nominal"},
             {"scale", {{"range", json::array({"#333333"})}}},
             {"legend", {{"title", nullptr}}}}},
           {"tooltip", Tooltip({{"steps", "steps to target"}, {"kind", "status"}})}}}});
  }
  if (!missed.empty()) {
    const json tooltip = Tooltip({{"steps", "last step"}, {"kind", "status"}});
    layers.push_back(NotReachedSeries(s, missed, x, y, tooltip, shape));
  }
  std::vector<std::string> parts;
  const BatchBest* first = nullptr;
  const BatchBest* last = nullptr;
  for (const BatchBest& b : s.target.best) {
    if (!b.best) continue;
    if (first == nullptr) first = &b;
    last = &b;
  }
  if (first != nullptr && last != first) {
    parts.push_back(fmt::format("The best configuration needs {} steps at B={} and {} at B={}",
                                ProseNumber(first->best_steps), first->batch_size,
                                ProseNumber(last->best_steps), last->batch_size));
  } else if (first != nullptr) {
    parts.push_back(fmt::format("Only B={} reached the target, in {} steps", first->batch_size,
                                ProseNumber(first->best_steps)));
  } else {
    parts.push_back("No run reached the target");
  }
  if (s.crit.status.ok()) {
    const CritFit& f = s.crit.fit;
    json fit = json::array();
    double lo = 1e300, hi = 0;
    for (const BatchBest& b : s.target.best) {
      lo = std::min(lo, static_cast<double>(b.batch_size));
      hi = std::max(hi, static_cast<double>(b.batch_size));
    }
    lo /= 2;
    hi *= 2;
    for (int i = 0; i <= 60; ++i) {
      const double b = lo * std::pow(hi / lo, i / 60.0);
      fit.push_back({{"batch_size", b}, {"steps", f.StepsAt(b)}});
    }
    layers.push_back({{"name", "fit"},
                      {"data", {{"values", fit}}},
                      {"mark", {{"type", "line"}, {"color", "#d62728"}, {"strokeDash", {6, 3}}}},
                      {"encoding", {{"x", x}, {"y", y}}}});
    // B_crit itself: a vertical rule, and its interval as a band behind the points.
    if (Positive(f.b_crit.value)) {
      json mark = {{"b_crit", f.b_crit.value}};
      const bool band = Positive(f.b_crit.low) && Positive(f.b_crit.high);
      if (band) {
        mark["low"] = f.b_crit.low;
        mark["high"] = f.b_crit.high;
        const json interval = {{"name", "b_crit_interval"},
                       {"data", {{"values", json::array({mark})}}},
                       {"mark", {{"type", "rect"}, {"color", "#d62728"}, {"opacity", 0.08}}},
                       {"encoding",
                        {{"x", BatchAxis(s, "low")},
                         {"x2", {{"field", "high"}}},
                         {"tooltip", json::array({{{"field", "low"}, {"title", "B_crit from"}},
                                                  {{"field", "high"}, {"title", "B_crit to"}}})}}}};
        layers.insert(layers.begin(), interval);  // behind the points
      }
      layers.push_back(
          {{"name", "b_crit"},
           {"data", {{"values", json::array({mark})}}},
           {"mark", {{"type", "rule"}, {"color", "#d62728"}, {"strokeWidth", 1.5}}},
           {"encoding",
            {{"x", BatchAxis(s, "b_crit")},
             {"tooltip", json::array({{{"field", "b_crit"}, {"title", "B_crit"}}})}}}});
    }
    parts.push_back(
        f.b_crit.available()
            ? fmt::format("the fit S_min(1 + B_crit/B) (dashed) puts B_crit at {} ({} to {}; the "
                          "red rule and band)",
                          ProseNumber(f.b_crit.value), ProseNumber(f.b_crit.low),
                          ProseNumber(f.b_crit.high))
            : fmt::format("the fit S_min(1 + B_crit/B) (dashed) puts B_crit at {} (the red rule; "
                          "no interval: {})",
                          ProseNumber(f.b_crit.value), f.b_crit.unavailable));
  }
  if (!missed.empty()) {
    parts.push_back(fmt::format("{} run(s) stopped without reaching it", missed.size()));
  }
  std::string reading;
  for (size_t i = 0; i < parts.size(); ++i) reading += (i == 0 ? "" : "; ") + parts[i];
  c.reading = reading + ".";
  spec["layer"] = layers;
  c.spec = spec;
  return c;
}

std::optional<Chart> ParetoChart(const Study& s) {
  if (!s.target_status.ok()) return std::nullopt;
  const ComputeUnit unit = s.pareto.compute.unit;
  const char* unit_name = ComputeUnitName(unit);
  std::vector<bool> on(s.pareto.points.size(), false);
  for (size_t i : s.pareto.frontier) on[i] = true;
  json pts = json::array(), front = json::array(), missed = json::array();
  for (size_t i = 0; i < s.pareto.points.size(); ++i) {
    const TargetHit& h = *s.pareto.hits[i];
    const ParetoPoint& p = s.pareto.points[i];
    if (!Positive(p.time) || !Positive(p.compute)) continue;
    json row = RunRow(h.run_id, h.label, h.batch_size, h.world_size);
    row["seconds"] = p.time;
    row["compute"] = p.compute;
    row["frontier"] = on[i] ? "on the frontier" : "dominated";
    row["tag"] = fmt::format("B={} K={}", h.batch_size, h.world_size);
    pts.push_back(row);
    if (on[i]) front.push_back(row);
  }
  for (const TargetHit& h : s.target.hits) {
    if (h.status != HitStatus::kNeverReached && h.status != HitStatus::kDiverged &&
        h.status != HitStatus::kFailed) {
      continue;
    }
    const RunCurves* c = CurvesOf(s, h.run_id);
    if (c == nullptr || !Positive(c->total_seconds)) continue;
    // In FLOPs, a run that never reported flops_per_step has no spent compute to draw.
    const double spent = SpentIn(h, c->last_step, c->total_seconds, unit);
    if (!Positive(spent)) continue;
    json row = RunRow(h.run_id, h.label, h.batch_size, h.world_size);
    row["seconds"] = c->total_seconds;
    row["compute"] = spent;
    row["kind"] = NotReachedStatus(h.status) + ": total spent, a lower bound";
    missed.push_back(row);
  }
  if (pts.empty() && missed.empty()) return std::nullopt;
  std::sort(front.begin(), front.end(),
            [](const json& a, const json& b) { return a["compute"] < b["compute"]; });
  Chart c{"pareto", "Time vs compute to target (Pareto frontier)", "", {}};
  const json shape = ShapeByRanks(s);
  const FrontierLabels labels = PlaceFrontierLabels({&pts, &missed}, front);
  const json& placed = labels.placed;
  json spec = Base(
      c.title,
      fmt::format("the frontier joined in red and labelled{} (no run is both faster and "
                  "cheaper)\nopen {}: runs that never reached the target{}",
                  placed.size() == front.size() ? "" : " where there is room",
                  shape.is_null() ? "triangles" : "symbols",
                  shape.is_null() ? "" : "; shape: ranks (K)"));
  const json x = LogAxis("compute", fmt::format("compute to target ({})", unit_name), labels.xs);
  const json y = LogAxis("seconds", "training time to target (s)", labels.ys);
  json layers = json::array();
  layers.push_back(PointSeries(
      s, "runs", pts, 60, x, y,
      Tooltip({{"seconds", "seconds"}, {"compute", unit_name}, {"frontier", "frontier"}}), shape));
  AddFrontier(front, placed, x, y, layers);
  if (!missed.empty()) {
    const json tooltip = Tooltip({{"seconds", "seconds"}, {"kind", "status"}});
    layers.push_back(NotReachedSeries(s, missed, x, y, tooltip, shape));
  }
  if (!front.empty()) {
    const json& fast =
        *std::min_element(front.begin(), front.end(),
                          [](const json& a, const json& b) { return a["seconds"] < b["seconds"]; });
    const json& cheap = front.front();
    c.reading = fmt::format(
        "{} of {} runs that reached the target are on the frontier: the fastest, {}, takes {} s; "
        "the cheapest, {}, uses {} {}{}.",
        front.size(), pts.size(), fast["tag"].get<std::string>(),
        ProseNumber(fast["seconds"].get<double>()), cheap["tag"].get<std::string>(),
        ProseNumber(cheap["compute"].get<double>()), unit_name,
        missed.empty() ? "" : fmt::format("; {} run(s) never reached it", missed.size()));
  } else {
    c.reading = fmt::format("No run reached the target; {} run(s) are drawn at what they spent.",
                            missed.size());
  }
  spec["layer"] = layers;
  c.spec = spec;
  return c;
}

std::optional<Chart> ProjectionChart(const Study& s) {
  if (!s.projection.status.ok() || s.projection.points.empty()) return std::nullopt;
  json rows = json::array(), front = json::array();
  for (const ProjectedPoint& p : s.projection.points) {
    if (!Positive(p.time_to_target) || !Positive(p.compute)) continue;
    json row = {{"run", fmt::format("projected B={} K={}", p.batch_size, p.world_size)},
                {"config", fmt::format("B={} K={}", p.batch_size, p.world_size)},
                {"K", p.world_size},
                {"batch_size", p.batch_size},
                {"seconds", p.time_to_target},
                {"compute", p.compute},
                {"steps", p.steps},
                {"comm_seconds", p.comm_seconds},
                {"frontier", p.on_frontier ? "projected frontier" : "dominated"},
                {"tag", fmt::format("B={} K={}", p.batch_size, p.world_size)}};
    rows.push_back(row);
    if (p.on_frontier) front.push_back(row);
  }
  if (rows.empty()) return std::nullopt;
  Chart c{"projection",
          "PROJECTED time vs compute on " + s.projection.profile.name + " (a model)",
          "",
          {}};
  // Shape by K when the report's shapes cover every projected rank count (by default the
  // projection goes up to K=1024: then K is in the labels and tooltips only).
  json shape = ShapeByRanks(s);
  for (const json& r : rows) {
    if (!shape.is_null() && std::find(shape["scale"]["domain"].begin(),
                                      shape["scale"]["domain"].end(),
                                      r["K"]) == shape["scale"]["domain"].end()) {
      shape = nullptr;
    }
  }
  std::sort(front.begin(), front.end(),
            [](const json& a, const json& b) { return a["compute"] < b["compute"]; });
  const FrontierLabels labels = PlaceFrontierLabels({&rows}, front);
  const json& placed = labels.placed;
  json spec = Base(c.title,
                   fmt::format("a model from the measured step times and steps to target, not a "
                               "measurement\nthe projected frontier joined in red and labelled{}{}",
                               placed.size() == front.size() ? "" : " where there is room",
                               shape.is_null() ? "" : "; shape: ranks (K)"));
  const json x = LogAxis("compute", "compute to target (rank-seconds)", labels.xs);
  const json y = LogAxis("seconds", "time to target (s)", labels.ys);
  json layers = json::array();
  // The points are the chart's own data (below): the layer has none of its own.
  layers.push_back(PointSeries(s, "points", nullptr, 50, x, y,
                               Tooltip({{"seconds", "seconds"},
                                        {"compute", "rank-seconds"},
                                        {"steps", "steps"},
                                        {"frontier", "frontier"}}),
                               shape));
  AddFrontier(front, placed, x, y, layers);
  spec["data"] = {{"values", rows}};
  spec["layer"] = layers;
  c.spec = spec;
  const json& fast = *std::min_element(rows.begin(), rows.end(), [](const json& a, const json& b) {
    return a["seconds"] < b["seconds"];
  });
  c.reading = fmt::format(
      "Projected on {}, the fastest of {} configurations is {} at {} s to target ({} on the "
      "projected frontier). {}",
      s.projection.profile.name, rows.size(), fast["tag"].get<std::string>(),
      ProseNumber(fast["seconds"].get<double>()), front.size(), s.projection.check.Sentence());
  return c;
}

}  // namespace batchlab::analysis::charts
