// Vega-Lite charts of a study (see report_charts.h).
#include "analysis/report_charts.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>

#include <fmt/core.h>

#include "analysis/table.h"

namespace batchlab::analysis {

namespace {

using json = nlohmann::json;

std::string N(double v) { return FormatNumber(v, 3); }

bool Positive(double v) { return std::isfinite(v) && v > 0; }

// A quantitative axis field, log-scaled when asked.
json Quant(const std::string& field, const std::string& title, bool log) {
  json e = {{"field", field}, {"type", "quantitative"}, {"title", title}};
  if (log) e["scale"] = {{"type", "log"}};
  return e;
}

// Every batch size the report's charts can show (runs, projected points, scaling groups),
// increasing: the one colour domain of the whole report.
std::vector<int64_t> BatchSizes(const Study& s) {
  std::set<int64_t> b;
  for (const TargetHit& h : s.target.hits) b.insert(h.batch_size);
  for (const RunCurves& r : s.curves.runs) b.insert(r.batch_size);
  for (const GnsRun& r : s.gns.runs) b.insert(r.batch_size);
  for (const ProjectedPoint& p : s.projection.points) b.insert(p.batch_size);
  for (const ScalingRow& r : s.scaling.strong) {
    if (r.group.rfind("B=", 0) == 0) b.insert(std::atoll(r.group.c_str() + 2));
  }
  b.erase(0);
  return {b.begin(), b.end()};
}

// Colour by batch size, one colour per batch size across the whole report (the domain is every
// batch size of the study, whichever a chart draws); the legend toggles a batch size's series.
json ColorByBatch(const Study& s) {
  return {{"field", "batch_size"},
          {"type", "ordinal"},
          {"title", "batch size"},
          {"scale", {{"scheme", "viridis"}, {"domain", BatchSizes(s)}}}};
}
json LegendToggle() {
  return json::array({{{"name", "pick"},
                       {"select", {{"type", "point"}, {"fields", {"batch_size"}}}},
                       {"bind", "legend"}}});
}
json ToggledOpacity(double dim) {
  return {{"condition", {{"param", "pick"}, {"value", 1}}}, {"value", dim}};
}

json Tooltip(std::initializer_list<std::pair<const char*, const char*>> fields) {
  json t = json::array(
      {{{"field", "run"}, {"title", "run"}}, {{"field", "config"}, {"title", "config"}}});
  for (const auto& [field, title] : fields) t.push_back({{"field", field}, {"title", title}});
  return t;
}

json Base(const std::string& title, const std::string& subtitle) {
  json t = {{"text", title}};
  if (!subtitle.empty()) t["subtitle"] = subtitle;
  return {{"$schema", "https://vega.github.io/schema/vega-lite/v6.json"},
          {"title", t},
          {"width", 620},
          {"height", 320},
          {"config", {{"legend", {{"orient", "right"}}}, {"axis", {{"labelFontSize", 11}}}}}};
}

// Per-point rows carry only the run id; its label and batch size are joined in the browser (a
// series of 300 points then names its configuration once).
json RunLookup(const json& runs) {
  return json::array(
      {{{"lookup", "run"},
        {"from",
         {{"data", {{"values", runs}}}, {"key", "run"}, {"fields", {"config", "batch_size"}}}}}});
}

const RunCurves* CurvesOf(const Study& s, const std::string& run_id) {
  for (const RunCurves& r : s.curves.runs) {
    if (r.run_id == run_id) return &r;
  }
  return nullptr;
}

std::string NotReachedStatus(HitStatus st) {
  return st == HitStatus::kDiverged  ? "diverged"
         : st == HitStatus::kFailed  ? "failed"
         : st == HitStatus::kPruned  ? "pruned"
         : st == HitStatus::kStalled ? "stalled"
                                     : "never reached";
}

std::optional<Chart> StepsChart(const Study& s) {
  if (!s.target_status.ok() || s.target.hits.empty()) return std::nullopt;
  std::map<std::string, bool> best;
  for (const BatchBest& b : s.target.best) {
    if (b.best) best[b.best->run_id] = true;
  }
  json reached = json::array(), missed = json::array();
  for (const TargetHit& h : s.target.hits) {
    json row = {
        {"run", h.run_id}, {"config", h.label}, {"batch_size", h.batch_size}, {"K", h.world_size}};
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
  json spec = Base(c.title, "target " + s.target.target.ToString() +
                                "; open triangles: runs that stopped without reaching it (never "
                                "reached, diverged, failed, pruned, stalled)");
  json x = Quant("batch_size", "global batch size", true);
  json y = Quant("steps", "steps", true);
  json layers = json::array();
  layers.push_back({{"name", "reached"},
                    {"data", {{"values", reached}}},
                    {"params", LegendToggle()},
                    {"mark", {{"type", "point"}, {"filled", true}, {"size", 70}}},
                    {"encoding",
                     {{"x", x},
                      {"y", y},
                      {"color", ColorByBatch(s)},
                      {"shape", {{"field", "kind"}, {"type", "nominal"}, {"title", "run"}}},
                      {"opacity", ToggledOpacity(0.1)},
                      {"tooltip", Tooltip({{"steps", "steps to target"}, {"kind", "status"}})}}}});
  if (!missed.empty()) {
    layers.push_back(
        {{"name", "not_reached"},
         {"data", {{"values", missed}}},
         {"mark", {{"type", "point"}, {"shape", "triangle-up"}, {"filled", false}, {"size", 90}}},
         {"encoding",
          {{"x", x},
           {"y", y},
           {"color", ColorByBatch(s)},
           {"tooltip", Tooltip({{"steps", "last step"}, {"kind", "status"}})}}}});
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
                                N(first->best_steps), first->batch_size, N(last->best_steps),
                                last->batch_size));
  } else if (first != nullptr) {
    parts.push_back(fmt::format("Only B={} reached the target, in {} steps", first->batch_size,
                                N(first->best_steps)));
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
                        {{"x", Quant("low", "global batch size", true)},
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
            {{"x", Quant("b_crit", "global batch size", true)},
             {"tooltip", json::array({{{"field", "b_crit"}, {"title", "B_crit"}}})}}}});
    }
    parts.push_back(
        f.b_crit.available()
            ? fmt::format("the fit S_min(1 + B_crit/B) (dashed) puts B_crit at {} ({} to {}; the "
                          "red rule and band)",
                          N(f.b_crit.value), N(f.b_crit.low), N(f.b_crit.high))
            : fmt::format("the fit S_min(1 + B_crit/B) (dashed) puts B_crit at {} (the red rule; "
                          "no interval: {})",
                          N(f.b_crit.value), f.b_crit.unavailable));
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
    json row = {{"run", h.run_id},
                {"config", h.label},
                {"batch_size", h.batch_size},
                {"K", h.world_size},
                {"seconds", p.time},
                {"compute", p.compute},
                {"frontier", on[i] ? "on the frontier" : "dominated"},
                {"tag", fmt::format("B={} K={}", h.batch_size, h.world_size)}};
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
    missed.push_back({{"run", h.run_id},
                      {"config", h.label},
                      {"batch_size", h.batch_size},
                      {"K", h.world_size},
                      {"seconds", c->total_seconds},
                      {"compute", spent},
                      {"kind", NotReachedStatus(h.status) + ": total spent, a lower bound"}});
  }
  if (pts.empty() && missed.empty()) return std::nullopt;
  std::sort(front.begin(), front.end(),
            [](const json& a, const json& b) { return a["compute"] < b["compute"]; });
  Chart c{"pareto", "Time vs compute to target (Pareto frontier)", "", {}};
  json spec = Base(c.title,
                   "labelled: the frontier (no run is both faster and cheaper); open "
                   "triangles: runs that never reached the target");
  json x = Quant("compute", fmt::format("compute to target ({})", unit_name), true);
  json y = Quant("seconds", "training time to target (s)", true);
  json layers = json::array();
  layers.push_back(
      {{"name", "runs"},
       {"data", {{"values", pts}}},
       {"params", LegendToggle()},
       {"mark", {{"type", "point"}, {"filled", true}, {"size", 60}}},
       {"encoding",
        {{"x", x},
         {"y", y},
         {"color", ColorByBatch(s)},
         {"shape", {{"field", "frontier"}, {"type", "nominal"}, {"title", "run"}}},
         {"opacity", ToggledOpacity(0.1)},
         {"tooltip",
          Tooltip({{"seconds", "seconds"}, {"compute", unit_name}, {"frontier", "frontier"}})}}}});
  if (!front.empty()) {
    layers.push_back({{"name", "frontier"},
                      {"data", {{"values", front}}},
                      {"mark", {{"type", "line"}, {"color", "#d62728"}}},
                      {"encoding", {{"x", x}, {"y", y}, {"order", {{"field", "compute"}}}}}});
    layers.push_back({{"name", "labels"},
                      {"data", {{"values", front}}},
                      {"mark", {{"type", "text"}, {"align", "left"}, {"dx", 7}, {"dy", -7}}},
                      {"encoding", {{"x", x}, {"y", y}, {"text", {{"field", "tag"}}}}}});
  }
  if (!missed.empty()) {
    layers.push_back(
        {{"name", "not_reached"},
         {"data", {{"values", missed}}},
         {"mark", {{"type", "point"}, {"shape", "triangle-up"}, {"filled", false}, {"size", 90}}},
         {"encoding",
          {{"x", x},
           {"y", y},
           {"color", ColorByBatch(s)},
           {"tooltip", Tooltip({{"seconds", "seconds"}, {"kind", "status"}})}}}});
  }
  if (!front.empty()) {
    const json& fast =
        *std::min_element(front.begin(), front.end(),
                          [](const json& a, const json& b) { return a["seconds"] < b["seconds"]; });
    const json& cheap = front.front();
    c.reading = fmt::format(
        "{} of {} runs that reached the target are on the frontier: the fastest, {}, takes {} s; "
        "the cheapest, {}, uses {} {}{}.",
        front.size(), pts.size(), fast["tag"].get<std::string>(), N(fast["seconds"].get<double>()),
        cheap["tag"].get<std::string>(), N(cheap["compute"].get<double>()), unit_name,
        missed.empty() ? "" : fmt::format("; {} run(s) never reached it", missed.size()));
  } else {
    c.reading = fmt::format("No run reached the target; {} run(s) are drawn at what they spent.",
                            missed.size());
  }
  spec["layer"] = layers;
  c.spec = spec;
  return c;
}

struct CurveInfo {
  const char* metric;
  const char* title;
  const char* axis;
  bool log_y;
};

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
      rows.push_back({{"run", r.run_id}, {"step", series->steps[i]}, {"value", v}});
      ++drawn;
      if (v < lo) lo = v, lo_b = r.batch_size;
      if (v > hi) hi = v, hi_b = r.batch_size;
    }
    if (drawn == 0) continue;
    ++runs;
    labels.push_back({{"run", r.run_id}, {"config", r.label}, {"batch_size", r.batch_size}});
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
  json spec = Base(c.title, fmt::format("{} runs, one line each, coloured by batch size; click a "
                                        "legend entry to show only that batch size",
                                        runs));
  json y = Quant("value", info.axis, info.log_y);
  if (info.log_y && std::string(info.metric) == "loss" && hi > 4 * first_max) {
    // A diverging run would flatten every other curve: the axis stops at the largest initial loss
    // and the line leaves the chart (clipped) instead.
    y["scale"]["domain"] = {lo, first_max * 1.5};
    spec["title"]["subtitle"] =
        spec["title"]["subtitle"].get<std::string>() +
        "; axis stops at 1.5x the largest initial loss (diverging runs leave the chart)";
  }
  spec["data"] = {{"values", rows}};
  spec["transform"] = RunLookup(labels);
  spec["params"] = LegendToggle();
  spec["mark"] = {{"type", "line"}, {"clip", true}, {"strokeWidth", 1.5}};
  spec["encoding"] = {
      {"x", Quant("step", "step", false)}, {"y", y},
      {"detail", {{"field", "run"}}},      {"color", ColorByBatch(s)},
      {"opacity", ToggledOpacity(0.06)},   {"tooltip", Tooltip({{"batch_size", "batch size"}})}};
  spec["name"] = "curves";
  c.spec = spec;
  if (std::string(info.metric) == "lr") {
    c.reading =
        fmt::format("The learning rate used ranges from {} (B={}) to {} (B={}) across {} runs.",
                    N(lo), lo_b, N(hi), hi_b, runs);
  } else {
    // The final value of the best run per batch size, smallest and largest batch.
    const auto& [b0, v0] = *final_by_batch.begin();
    const auto& [b1, v1] = *final_by_batch.rbegin();
    const double best0 = higher_better ? v0.second : v0.first;
    const double best1 = higher_better ? v1.second : v1.first;
    c.reading = final_by_batch.size() > 1
                    ? fmt::format("The best final {} is {} at B={} and {} at B={} ({} runs).",
                                  info.axis, N(best0), b0, N(best1), b1, runs)
                    : fmt::format("The best final {} is {} at B={} ({} runs).", info.axis, N(best0),
                                  b0, runs);
  }
  return c;
}

std::optional<Chart> GnsChart(const Study& s) {
  json rows = json::array(), labels = json::array();
  int runs = 0;
  for (const GnsRun& r : s.gns.runs) {
    int drawn = 0;
    for (const GnsPoint& p : r.series) {
      if (!Positive(p.b_simple)) continue;
      rows.push_back({{"run", r.run_id}, {"step", p.step}, {"b_simple", p.b_simple}});
      ++drawn;
    }
    if (drawn == 0) continue;
    ++runs;
    labels.push_back({{"run", r.run_id}, {"config", r.label}, {"batch_size", r.batch_size}});
  }
  if (runs == 0) return std::nullopt;
  Chart c{"gns", "Smoothed B_simple over training", "", {}};
  json spec = Base(c.title, fmt::format("ratio of the debiased EMAs (beta = {}) of tr(Sigma) and "
                                        "|G|^2; {} runs, one line each",
                                        s.options.beta, runs));
  spec["data"] = {{"values", rows}};
  spec["transform"] = RunLookup(labels);
  spec["params"] = LegendToggle();
  spec["name"] = "series";
  spec["mark"] = {{"type", "line"}, {"strokeWidth", 1.5}};
  spec["encoding"] = {
      {"x", Quant("step", "step", false)}, {"y", Quant("b_simple", "B_simple (samples)", true)},
      {"detail", {{"field", "run"}}},      {"color", ColorByBatch(s)},
      {"opacity", ToggledOpacity(0.06)},   {"tooltip", Tooltip({{"batch_size", "batch size"}})}};
  c.spec = spec;
  if (s.gns.median) {
    c.reading = fmt::format(
        "Over the estimation window the per-run B_simple has median {} (range "
        "{} to {}){}.",
        N(*s.gns.median), N(*s.gns.min), N(*s.gns.max),
        s.crit.b_simple_ratio ? fmt::format(", {}x the fitted B_crit", N(*s.crit.b_simple_ratio))
                              : "");
  } else {
    c.reading = fmt::format(
        "{} runs logged the noise scale, but no window estimate was possible "
        "(see the table).",
        runs);
  }
  return c;
}

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
              {"opacity", {{"condition", {{"param", "pick"}, {"value", 1}}}, {"value", 0.1}}},
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
                                     N(100 * worst->comm_fraction))
                       : ", where communication was not measured (no run logged comm_seconds)";
  c.reading = worst != nullptr
                  ? fmt::format("The lowest efficiency is {} at K={} ({}){}; the vertical bars are "
                                "95% intervals from the step-time distributions.",
                                N(worst->efficiency), worst->world_size, worst->group, comm)
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

std::optional<Chart> ProjectionChart(const Study& s) {
  if (!s.projection.status.ok() || s.projection.points.empty()) return std::nullopt;
  json rows = json::array(), front = json::array();
  for (const ProjectedPoint& p : s.projection.points) {
    if (!Positive(p.time_to_target) || !Positive(p.compute)) continue;
    json row = {{"run", fmt::format("projected K={} B={}", p.world_size, p.batch_size)},
                {"config", fmt::format("K={} B={}", p.world_size, p.batch_size)},
                {"K", p.world_size},
                {"batch_size", p.batch_size},
                {"seconds", p.time_to_target},
                {"compute", p.compute},
                {"steps", p.steps},
                {"comm_seconds", p.comm_seconds},
                {"frontier", p.on_frontier ? "projected frontier" : "dominated"},
                {"tag", fmt::format("K={} B={}", p.world_size, p.batch_size)}};
    rows.push_back(row);
    if (p.on_frontier) front.push_back(row);
  }
  if (rows.empty()) return std::nullopt;
  Chart c{"projection",
          "PROJECTED time vs compute on " + s.projection.profile.name + " (a model)",
          "",
          {}};
  json spec = Base(c.title,
                   "a model from the measured step times and steps to target, not a "
                   "measurement; labelled: the projected frontier");
  json x = Quant("compute", "compute to target (rank-seconds)", true);
  json y = Quant("seconds", "time to target (s)", true);
  json layers = json::array();
  layers.push_back(
      {{"name", "points"},
       {"params", LegendToggle()},
       {"mark", {{"type", "point"}, {"filled", true}, {"size", 50}}},
       {"encoding",
        {{"x", x},
         {"y", y},
         {"color", ColorByBatch(s)},
         {"shape", {{"field", "frontier"}, {"type", "nominal"}, {"title", "point"}}},
         {"opacity", ToggledOpacity(0.1)},
         {"tooltip",
          Tooltip({{"seconds", "seconds"}, {"compute", "rank-seconds"}, {"steps", "steps"}})}}}});
  if (!front.empty()) {
    layers.push_back({{"name", "labels"},
                      {"data", {{"values", front}}},
                      {"mark", {{"type", "text"}, {"align", "left"}, {"dx", 7}, {"dy", -7}}},
                      {"encoding", {{"x", x}, {"y", y}, {"text", {{"field", "tag"}}}}}});
  }
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
      N(fast["seconds"].get<double>()), front.size(), s.projection.check.Sentence());
  return c;
}

}  // namespace

std::vector<Chart> StudyCharts(const Study& s) {
  std::vector<Chart> out;
  auto add = [&out](std::optional<Chart> c) {
    if (c) out.push_back(std::move(*c));
  };
  add(StepsChart(s));
  add(ParetoChart(s));
  add(CurveChart(s, {"loss", "Training loss per run", "training loss", true}));
  add(CurveChart(s, {"test_loss", "Test loss per run", "test loss", true}));
  add(CurveChart(s, {"test_accuracy", "Test accuracy per run", "test accuracy", false}));
  add(CurveChart(s, {"lr", "Learning rate used per run (the lr metric)", "learning rate", false}));
  add(GnsChart(s));
  add(ScalingChart(s));
  add(ProjectionChart(s));
  return out;
}

}  // namespace batchlab::analysis
