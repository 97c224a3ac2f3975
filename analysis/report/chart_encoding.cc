// The charts' shared vocabulary and series (see chart_encoding.h).
#include "analysis/report/chart_encoding.h"

#include <cmath>
#include <cstdlib>
#include <set>

namespace batchlab::analysis::charts {
namespace {

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

}  // namespace

bool Positive(double v) { return std::isfinite(v) && v > 0; }

json Quant(const std::string& field, const std::string& title, bool log) {
  json e = {{"field", field}, {"type", "quantitative"}, {"title", title}};
  if (log) e["scale"] = {{"type", "log"}};
  return e;
}

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

json ColorByBatch(const Study& s) {
  return {{"field", "batch_size"},
          {"type", "ordinal"},
          {"title", "batch size"},
          {"scale", {{"scheme", "viridis"}, {"domain", BatchSizes(s)}}}};
}
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

json RunRow(const std::string& run_id, const std::string& label, int64_t batch_size,
            int world_size) {
  return {{"run", run_id}, {"config", label}, {"batch_size", batch_size}, {"K", world_size}};
}

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

json PointSeries(const Study& s, const std::string& name, const json& rows, int size,
                 const json& x, const json& y, const json& tooltip, const json& shape) {
  json enc = {{"x", x},
              {"y", y},
              {"color", ColorByBatch(s)},
              {"opacity", ToggledOpacity(0.1)},
              {"tooltip", tooltip}};
  if (!shape.is_null()) enc["shape"] = shape;
  json layer = {{"name", name},
                {"params", LegendToggle()},
                {"mark", {{"type", "point"}, {"filled", true}, {"size", size}}},
                {"encoding", enc}};
  if (!rows.is_null()) layer["data"] = {{"values", rows}};
  return layer;
}

json NotReachedSeries(const Study& s, const json& rows, const json& x, const json& y,
                      const json& tooltip, const json& shape) {
  json mark = {{"type", "point"}, {"filled", false}, {"size", 90}, {"strokeWidth", 1.5}};
  json enc = {{"x", x}, {"y", y}, {"color", ColorByBatch(s)}, {"tooltip", tooltip}};
  if (shape.is_null()) {
    mark["shape"] = "triangle-up";
  } else {
    enc["shape"] = shape;
  }
  return {{"name", "not_reached"},
          {"data", {{"values", rows}}},
          {"mark", mark},
          {"encoding", enc}};
}

void RunLines(const Study& s, const json& rows, const json& labels, const json& y,
              const json& mark, const json& dash, const std::string& name, json& spec) {
  spec["data"] = {{"values", rows}};
  spec["transform"] = RunLookup(labels);
  spec["params"] = LegendToggle();
  spec["name"] = name;
  spec["mark"] = mark;
  spec["encoding"] = {{"y", y},
                      {"detail", {{"field", "run"}}},
                      {"color", ColorByBatch(s)},
                      {"opacity", ToggledOpacity(0.06)},
                      {"tooltip", Tooltip({{"batch_size", "batch size"}, {"step", "step"}})}};
  if (!dash.is_null()) spec["encoding"]["strokeDash"] = dash;
  SeenAxisWithStepToggle(s, spec);
}

}  // namespace batchlab::analysis::charts
