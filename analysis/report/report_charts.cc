// Vega-Lite charts of a study (see report_charts.h).
#include "analysis/report/report_charts.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>

#include <fmt/core.h>
#include <fmt/format.h>

#include "analysis/data/table.h"
#include "base/run_protocol.h"

namespace batchlab::analysis {

namespace {

using json = nlohmann::json;

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
// Every rank count (K) of the runs the charts draw and of the projected configurations,
// increasing.
std::vector<int> RankCounts(const Study& s, bool projection) {
  std::set<int> k;
  for (const TargetHit& h : s.target.hits) k.insert(h.world_size);
  for (const RunCurves& r : s.curves.runs) k.insert(r.world_size);
  for (const GnsRun& r : s.gns.runs) k.insert(r.world_size);
  if (projection) {
    for (const ProjectedPoint& p : s.projection.points) k.insert(p.world_size);
  }
  k.erase(0);
  return {k.begin(), k.end()};
}

// Shapes for rank counts: filled for runs that reached the target, open for those that did not.
constexpr const char* kRankShapes[] = {"circle",        "square",         "diamond",
                                       "cross",         "triangle-down",  "triangle-right",
                                       "triangle-left", "wedge"};
constexpr size_t kMaxRankShapes = sizeof(kRankShapes) / sizeof(kRankShapes[0]);

// The rank counts a chart encodes by shape (or dash): the runs' and the projection's together
// when they fit the shapes (one shape per K across the report), else the runs' alone; empty
// (nothing to encode) when there is one rank count.
std::vector<int> EncodedRanks(const Study& s) {
  std::vector<int> all = RankCounts(s, true);
  if (all.size() <= kMaxRankShapes) return all.size() > 1 ? all : std::vector<int>{};
  std::vector<int> runs = RankCounts(s, false);
  return runs.size() > 1 && runs.size() <= kMaxRankShapes ? runs : std::vector<int>{};
}

// Shape by rank count K, or null when the study has one (or more K than shapes).
json ShapeByRanks(const Study& s) {
  const std::vector<int> ks = EncodedRanks(s);
  if (ks.empty()) return nullptr;
  json range = json::array();
  for (size_t i = 0; i < ks.size(); ++i) range.push_back(kRankShapes[i]);
  return {{"field", "K"},
          {"type", "ordinal"},
          {"title", "ranks (K)"},
          {"scale", {{"domain", ks}, {"range", range}}}};
}

// Line dash by rank count K (solid for the smallest), or null as ShapeByRanks.
json DashByRanks(const Study& s) {
  const std::vector<int> ks = EncodedRanks(s);
  if (ks.empty()) return nullptr;
  const json dashes = json::array({json::array({1, 0}), json::array({6, 3}), json::array({2, 2}),
                                   json::array({8, 3, 2, 3}), json::array({12, 4}),
                                   json::array({1, 3}), json::array({4, 2, 1, 2}),
                                   json::array({10, 2, 2, 2, 2, 2})});
  json range = json::array();
  for (size_t i = 0; i < ks.size(); ++i) range.push_back(dashes[i]);
  return {{"field", "K"},
          {"type", "ordinal"},
          {"title", "ranks (K)"},
          {"scale", {{"domain", ks}, {"range", range}}}};
}

// A global-batch-size axis (log): ticks at the study's batch sizes, written in full.
json BatchAxis(const Study& s, const std::string& field) {
  json x = Quant(field, "global batch size", true);
  x["axis"] = {{"values", BatchSizes(s)}, {"format", "d"}};
  return x;
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

// A chart with its title; a subtitle with '\n' is drawn as several lines (a long one ran past
// the chart's width).
json Base(const std::string& title, const std::string& subtitle) {
  json t = {{"text", title}};
  if (subtitle.find('\n') != std::string::npos) {
    json lines = json::array();
    for (size_t at = 0, nl; at <= subtitle.size(); at = nl + 1) {
      nl = subtitle.find('\n', at);
      if (nl == std::string::npos) nl = subtitle.size();
      lines.push_back(subtitle.substr(at, nl - at));
    }
    t["subtitle"] = lines;
  } else if (!subtitle.empty()) {
    t["subtitle"] = subtitle;
  }
  return {{"$schema", "https://vega.github.io/schema/vega-lite/v6.json"},
          {"title", t},
          {"width", 620},
          {"height", 320},
          {"config",
           // Labels closer than 6 px are thinned out: touching tick labels read as one number
           // ("0.010.02").
           {{"legend", {{"orient", "right"}}},
            {"axis", {{"labelFontSize", 11}, {"labelSeparation", 6}}}}}};
}

// Per-point rows carry only the run id; its label and batch size are joined in the browser (a
// series of 300 points then names its configuration once).
json RunLookup(const json& runs) {
  return json::array(
      {{{"lookup", "run"},
        {"from",
         {{"data", {{"values", runs}}}, {"key", "run"}, {"fields", {"config", "batch_size", "K"}}}}}});
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

// ---- Labels beside points that overlap nothing (the time-vs-compute charts) ----
// A label's place is chosen here, in pixels, so the charts' log scales get explicit domains
// (LogScale) and every label its own position; a label with no free place is left out (the
// tooltip and the table still name its point).

constexpr double kPlotWidth = 620, kPlotHeight = 320;  // Base()

// The width of `text` in px at the text mark's 11 px sans-serif, measured on Debian's default
// (DejaVu Sans, wider than most) and rounded up.
double TextWidth(const std::string& text) {
  double w = 2;
  for (char ch : text) {
    w += ch == ' '                                        ? 3.6
         : ch == '='                                      ? 9.3
         : std::isdigit(static_cast<unsigned char>(ch))   ? 7.1
         : std::isupper(static_cast<unsigned char>(ch))   ? 8.0
                                                          : 6.8;
  }
  return w;
}

struct LogScale {
  double lo = 1, hi = 10, px = 1;  // domain and range [0, px]
  double Pixel(double v) const { return px * std::log(v / lo) / std::log(hi / lo); }
  double Value(double p) const { return lo * std::pow(hi / lo, p / px); }
  json Domain() const { return json::array({lo, hi}); }
};

// The log domain of `values` widened by `pad` of its extent (in log space) at each end.
LogScale PaddedLog(const std::vector<double>& values, double px, double pad) {
  LogScale sc;
  sc.px = px;
  double lo = 0, hi = 0;
  for (double v : values) {
    if (!Positive(v)) continue;
    lo = lo == 0 ? v : std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (lo == 0) return sc;
  if (hi / lo < 1.5) {  // a single value (or nearly): a decade around it
    lo /= 3;
    hi *= 3;
  }
  const double f = std::pow(hi / lo, pad);
  sc.lo = lo / f;
  sc.hi = hi * f;
  return sc;
}

struct Box {
  double x0, y0, x1, y1;
  bool Hits(const Box& o, double margin) const {
    return x0 < o.x1 + margin && o.x0 < x1 + margin && y0 < o.y1 + margin && o.y0 < y1 + margin;
  }
};

// Gives each row of `labelled` (fields xf, yf and "tag") a place for its tag beside its point
// that overlaps no other label and no point of `points` (x, y pairs) and stays in the plot:
// below-left first (no frontier point has another point there), then the other sides. Returns
// the rows that got one, with "label_x", "label_y": the label's centre in data coordinates.
json PlaceLabels(const json& labelled, const std::vector<std::pair<double, double>>& points,
                 const LogScale& xs, const LogScale& ys, const std::string& xf,
                 const std::string& yf) {
  auto px = [&](double v) { return xs.Pixel(v); };
  auto py = [&](double v) { return kPlotHeight - ys.Pixel(v); };
  std::vector<Box> taken;
  for (const auto& [x, y] : points) {
    if (Positive(x) && Positive(y)) taken.push_back({px(x) - 5, py(y) - 5, px(x) + 5, py(y) + 5});
  }
  const double h = 13;
  json out = json::array();
  for (const json& row : labelled) {
    const double x = px(row[xf].get<double>()), y = py(row[yf].get<double>());
    const double w = TextWidth(row["tag"].get<std::string>());
    const Box candidates[] = {
        {x - 4 - w, y + 4, x - 4, y + 4 + h},          // below left
        {x - 8 - w, y - h / 2, x - 8, y + h / 2},      // left
        {x - w / 2, y + 7, x + w / 2, y + 7 + h},      // below
        {x - 4 - w, y - 4 - h, x - 4, y - 4},          // above left
        {x + 4, y + 4, x + 4 + w, y + 4 + h},          // below right
        {x + 4, y - 4 - h, x + 4 + w, y - 4},          // above right
        {x - w / 2, y - 7 - h, x + w / 2, y - 7},      // above
        {x + 8, y - h / 2, x + 8 + w, y + h / 2},      // right
    };
    for (const Box& b : candidates) {
      if (b.x0 < 1 || b.y0 < 1 || b.x1 > kPlotWidth - 1 || b.y1 > kPlotHeight - 1) continue;
      if (std::any_of(taken.begin(), taken.end(), [&](const Box& t) { return b.Hits(t, 2); })) {
        continue;
      }
      taken.push_back(b);
      json placed = row;
      placed["label_x"] = xs.Value((b.x0 + b.x1) / 2);
      placed["label_y"] = ys.Value(kPlotHeight - (b.y0 + b.y1) / 2);
      out.push_back(placed);
      break;
    }
  }
  return out;
}

// A log axis over an explicit domain (PlaceLabels' pixels hold only then).
json LogAxis(const std::string& field, const std::string& title, const LogScale& sc) {
  json e = Quant(field, title, true);
  e["scale"]["domain"] = sc.Domain();
  e["scale"]["nice"] = false;
  return e;
}

// The text layer of PlaceLabels' rows: each tag centred where it was placed.
json LabelLayer(const json& placed, json x, json y) {
  x["field"] = "label_x";
  y["field"] = "label_y";
  return {{"name", "labels"},
          {"data", {{"values", placed}}},
          {"mark", {{"type", "text"}, {"align", "center"}, {"baseline", "middle"}, {"fontSize", 11}}},
          {"encoding", {{"x", x}, {"y", y}, {"text", {{"field", "tag"}}}}}};
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
  json reached_enc = {{"x", x},
                      {"y", y},
                      {"color", ColorByBatch(s)},
                      {"opacity", ToggledOpacity(0.1)},
                      {"tooltip", Tooltip({{"steps", "steps to target"}, {"kind", "status"}})}};
  if (!shape.is_null()) reached_enc["shape"] = shape;
  layers.push_back({{"name", "reached"},
                    {"data", {{"values", reached}}},
                    {"params", LegendToggle()},
                    {"mark", {{"type", "point"}, {"filled", true}, {"size", 70}}},
                    {"encoding", reached_enc}});
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
    json missed_mark = {{"type", "point"}, {"filled", false}, {"size", 90}, {"strokeWidth", 1.5}};
    json missed_enc = {{"x", x},
                       {"y", y},
                       {"color", ColorByBatch(s)},
                       {"tooltip", Tooltip({{"steps", "last step"}, {"kind", "status"}})}};
    if (shape.is_null()) {
      missed_mark["shape"] = "triangle-up";
    } else {
      missed_enc["shape"] = shape;
    }
    layers.push_back({{"name", "not_reached"},
                      {"data", {{"values", missed}}},
                      {"mark", missed_mark},
                      {"encoding", missed_enc}});
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
  const json shape = ShapeByRanks(s);
  std::vector<double> xs_all, ys_all;
  std::vector<std::pair<double, double>> all;
  for (const json* group : {&pts, &missed}) {
    for (const json& r : *group) {
      xs_all.push_back(r["compute"].get<double>());
      ys_all.push_back(r["seconds"].get<double>());
      all.emplace_back(xs_all.back(), ys_all.back());
    }
  }
  const LogScale xs = PaddedLog(xs_all, kPlotWidth, 0.08), ys = PaddedLog(ys_all, kPlotHeight, 0.1);
  const json placed = PlaceLabels(front, all, xs, ys, "compute", "seconds");
  json spec = Base(
      c.title,
      fmt::format("the frontier joined in red and labelled{} (no run is both faster and "
                  "cheaper)\nopen {}: runs that never reached the target{}",
                  placed.size() == front.size() ? "" : " where there is room",
                  shape.is_null() ? "triangles" : "symbols",
                  shape.is_null() ? "" : "; shape: ranks (K)"));
  json x = LogAxis("compute", fmt::format("compute to target ({})", unit_name), xs);
  json y = LogAxis("seconds", "training time to target (s)", ys);
  json layers = json::array();
  json runs_enc = {{"x", x},
                   {"y", y},
                   {"color", ColorByBatch(s)},
                   {"opacity", ToggledOpacity(0.1)},
                   {"tooltip", Tooltip({{"seconds", "seconds"},
                                        {"compute", unit_name},
                                        {"frontier", "frontier"}})}};
  if (!shape.is_null()) runs_enc["shape"] = shape;
  layers.push_back({{"name", "runs"},
                    {"data", {{"values", pts}}},
                    {"params", LegendToggle()},
                    {"mark", {{"type", "point"}, {"filled", true}, {"size", 60}}},
                    {"encoding", runs_enc}});
  if (!front.empty()) {
    layers.push_back({{"name", "frontier"},
                      {"data", {{"values", front}}},
                      {"mark", {{"type", "line"}, {"color", "#d62728"}}},
                      {"encoding", {{"x", x}, {"y", y}, {"order", {{"field", "compute"}}}}}});
    if (!placed.empty()) layers.push_back(LabelLayer(placed, x, y));
  }
  if (!missed.empty()) {
    json missed_mark = {{"type", "point"}, {"filled", false}, {"size", 90}, {"strokeWidth", 1.5}};
    json missed_enc = {{"x", x},
                       {"y", y},
                       {"color", ColorByBatch(s)},
                       {"tooltip", Tooltip({{"seconds", "seconds"}, {"kind", "status"}})}};
    if (shape.is_null()) {
      missed_mark["shape"] = "triangle-up";
    } else {
      missed_enc["shape"] = shape;
    }
    layers.push_back({{"name", "not_reached"},
                      {"data", {{"values", missed}}},
                      {"mark", missed_mark},
                      {"encoding", missed_enc}});
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

// The x axis of a per-run line chart: samples seen (tokens on a language model's sweep), where
// runs of every batch size are compared at equal data, with a step axis one click away. The
// alternatives are in the spec's `usermeta.x_axes` (first: the default); report_html.cc's
// script draws the toggle and swaps `encoding.x`.
void SeenAxisWithStepToggle(const Study& s, json& spec) {
  const std::string unit = s.curves.seen_unit;
  const json seen = Quant(unit, unit + " seen", false);
  spec["encoding"]["x"] = seen;
  spec["usermeta"] = {
      {"x_axes", json::array({{{"name", unit}, {"x", seen}},
                              {{"name", "step"}, {"x", Quant("step", "step", false)}}})}};
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
    labels.push_back({{"run", r.run_id},
                      {"config", r.label},
                      {"batch_size", r.batch_size},
                      {"K", r.world_size}});
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
  spec["data"] = {{"values", rows}};
  spec["transform"] = RunLookup(labels);
  spec["params"] = LegendToggle();
  spec["mark"] = {{"type", "line"}, {"clip", true}, {"strokeWidth", 1.5}};
  spec["encoding"] = {{"y", y},
                      {"detail", {{"field", "run"}}},
                      {"color", ColorByBatch(s)},
                      {"opacity", ToggledOpacity(0.06)},
                      {"tooltip", Tooltip({{"batch_size", "batch size"}, {"step", "step"}})}};
  if (!dash.is_null()) spec["encoding"]["strokeDash"] = dash;
  SeenAxisWithStepToggle(s, spec);
  spec["name"] = "curves";
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
    labels.push_back({{"run", r.run_id},
                      {"config", r.label},
                      {"batch_size", r.batch_size},
                      {"K", r.world_size}});
  }
  if (runs == 0) return std::nullopt;
  Chart c{"gns", "Smoothed B_simple over training", "", {}};
  const json dash = DashByRanks(s);
  json spec = Base(c.title, fmt::format("ratio of the debiased EMAs (beta = {}) of tr(Sigma) and "
                                        "|G|^2; {} runs, one line each{}",
                                        s.options.beta, runs,
                                        dash.is_null() ? "" : ", dashed by ranks (K)"));
  spec["data"] = {{"values", rows}};
  spec["transform"] = RunLookup(labels);
  spec["params"] = LegendToggle();
  spec["name"] = "series";
  spec["mark"] = {{"type", "line"}, {"strokeWidth", 1.5}};
  spec["encoding"] = {{"y", Quant("b_simple", "B_simple (samples)", true)},
                      {"detail", {{"field", "run"}}},
                      {"color", ColorByBatch(s)},
                      {"opacity", ToggledOpacity(0.06)},
                      {"tooltip", Tooltip({{"batch_size", "batch size"}, {"step", "step"}})}};
  if (!dash.is_null()) spec["encoding"]["strokeDash"] = dash;
  SeenAxisWithStepToggle(s, spec);
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
  std::vector<double> xs_all, ys_all;
  std::vector<std::pair<double, double>> all;
  for (const json& r : rows) {
    xs_all.push_back(r["compute"].get<double>());
    ys_all.push_back(r["seconds"].get<double>());
    all.emplace_back(xs_all.back(), ys_all.back());
  }
  std::sort(front.begin(), front.end(),
            [](const json& a, const json& b) { return a["compute"] < b["compute"]; });
  const LogScale xs = PaddedLog(xs_all, kPlotWidth, 0.08), ys = PaddedLog(ys_all, kPlotHeight, 0.1);
  const json placed = PlaceLabels(front, all, xs, ys, "compute", "seconds");
  json spec = Base(c.title,
                   fmt::format("a model from the measured step times and steps to target, not a "
                               "measurement\nthe projected frontier joined in red and labelled{}{}",
                               placed.size() == front.size() ? "" : " where there is room",
                               shape.is_null() ? "" : "; shape: ranks (K)"));
  json x = LogAxis("compute", "compute to target (rank-seconds)", xs);
  json y = LogAxis("seconds", "time to target (s)", ys);
  json layers = json::array();
  json enc = {{"x", x},
              {"y", y},
              {"color", ColorByBatch(s)},
              {"opacity", ToggledOpacity(0.1)},
              {"tooltip", Tooltip({{"seconds", "seconds"},
                                   {"compute", "rank-seconds"},
                                   {"steps", "steps"},
                                   {"frontier", "frontier"}})}};
  if (!shape.is_null()) enc["shape"] = shape;
  layers.push_back({{"name", "points"},
                    {"params", LegendToggle()},
                    {"mark", {{"type", "point"}, {"filled", true}, {"size", 50}}},
                    {"encoding", enc}});
  if (!front.empty()) {
    layers.push_back({{"name", "frontier"},
                      {"data", {{"values", front}}},
                      {"mark", {{"type", "line"}, {"color", "#d62728"}}},
                      {"encoding", {{"x", x}, {"y", y}, {"order", {{"field", "compute"}}}}}});
    if (!placed.empty()) layers.push_back(LabelLayer(placed, x, y));
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
      ProseNumber(fast["seconds"].get<double>()), front.size(), s.projection.check.Sentence());
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
  add(CurveChart(s, {protocol::kMetricLoss, "Training loss per run", "training loss", true}));
  add(CurveChart(s, {protocol::kMetricTestLoss, "Test loss per run", "test loss", true}));
  add(CurveChart(s,
                 {protocol::kMetricTestAccuracy, "Test accuracy per run", "test accuracy", false}));
  add(CurveChart(s, {"lr", "Learning rate used per run (the lr metric)", "learning rate", false}));
  add(GnsChart(s));
  add(ScalingChart(s));
  add(ProjectionChart(s));
  return out;
}

}  // namespace batchlab::analysis
