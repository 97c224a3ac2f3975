// Label placement and log scales of the time-vs-compute charts (see chart_labels.h).
#include "analysis/report/chart_labels.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "analysis/report/chart_encoding.h"

namespace batchlab::analysis::charts {
namespace {

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

struct Box {
  double x0, y0, x1, y1;
  bool Hits(const Box& o, double margin) const {
    return x0 < o.x1 + margin && o.x0 < x1 + margin && y0 < o.y1 + margin && o.y0 < y1 + margin;
  }
};

}  // namespace

double LogScale::Pixel(double v) const { return px * std::log(v / lo) / std::log(hi / lo); }
double LogScale::Value(double p) const { return lo * std::pow(hi / lo, p / px); }

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

json LogAxis(const std::string& field, const std::string& title, const LogScale& sc) {
  json e = Quant(field, title, true);
  e["scale"]["domain"] = sc.Domain();
  e["scale"]["nice"] = false;
  return e;
}

json LabelLayer(const json& placed, json x, json y) {
  x["field"] = "label_x";
  y["field"] = "label_y";
  return {{"name", "labels"},
          {"data", {{"values", placed}}},
          {"mark", {{"type", "text"}, {"align", "center"}, {"baseline", "middle"}, {"fontSize", 11}}},
          {"encoding", {{"x", x}, {"y", y}, {"text", {{"field", "tag"}}}}}};
}

FrontierLabels PlaceFrontierLabels(std::initializer_list<const json*> point_rows,
                                   const json& front) {
  std::vector<double> xs_all, ys_all;
  std::vector<std::pair<double, double>> all;
  for (const json* group : point_rows) {
    for (const json& r : *group) {
      xs_all.push_back(r["compute"].get<double>());
      ys_all.push_back(r["seconds"].get<double>());
      all.emplace_back(xs_all.back(), ys_all.back());
    }
  }
  FrontierLabels f;
  f.xs = PaddedLog(xs_all, kPlotWidth, 0.08);
  f.ys = PaddedLog(ys_all, kPlotHeight, 0.1);
  f.placed = PlaceLabels(front, all, f.xs, f.ys, "compute", "seconds");
  return f;
}

void AddFrontier(const json& front, const json& placed, const json& x, const json& y,
                 json& layers) {
  if (front.empty()) return;
  layers.push_back({{"name", "frontier"},
                    {"data", {{"values", front}}},
                    {"mark", {{"type", "line"}, {"color", "#d62728"}}},
                    {"encoding", {{"x", x}, {"y", y}, {"order", {{"field", "compute"}}}}}});
  if (!placed.empty()) layers.push_back(LabelLayer(placed, x, y));
}

}  // namespace batchlab::analysis::charts
