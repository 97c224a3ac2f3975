// SVG charts for the report (see svg_plot.h).
#include "analysis/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/core.h>

#include "analysis/table.h"

namespace batchlab::analysis {

namespace {

struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  double Map(double v) const {  // -> [0, 1]
    const double a = log ? std::log10(v) : v;
    return (a - lo) / (hi - lo);
  }
  bool Valid(double v) const { return std::isfinite(v) && (!log || v > 0); }
};

Axis MakeAxis(const std::vector<const std::vector<double>*>& values, bool log) {
  Axis ax;
  ax.log = log;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto* v : values) {
    for (double x : *v) {
      if (!ax.Valid(x)) continue;
      const double a = log ? std::log10(x) : x;
      lo = std::min(lo, a);
      hi = std::max(hi, a);
    }
  }
  if (!std::isfinite(lo)) lo = 0, hi = 1;
  if (hi - lo < 1e-12) {
    lo -= 0.5;
    hi += 0.5;
  }
  const double pad = 0.05 * (hi - lo);
  ax.lo = lo - pad;
  ax.hi = hi + pad;
  return ax;
}

// Tick positions in data units: powers of ten (and 2, 5 multiples when few) on log axes.
std::vector<double> Ticks(const Axis& ax) {
  std::vector<double> t;
  if (ax.log) {
    for (int e = static_cast<int>(std::floor(ax.lo)); e <= static_cast<int>(std::ceil(ax.hi));
         ++e) {
      for (double m : {1.0, 2.0, 5.0}) {
        const double v = m * std::pow(10.0, e);
        const double a = std::log10(v);
        if (a >= ax.lo && a <= ax.hi) t.push_back(v);
      }
    }
    if (t.size() > 8) {
      std::vector<double> only10;
      for (double v : t) {
        if (std::fabs(std::log10(v) - std::round(std::log10(v))) < 1e-9) only10.push_back(v);
      }
      if (only10.size() >= 2) t = only10;
    }
    return t;
  }
  const double span = ax.hi - ax.lo;
  const double raw = span / 5;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  }
  for (double v = std::ceil(ax.lo / step) * step; v <= ax.hi; v += step) {
    t.push_back(std::fabs(v) < 1e-9 * step ? 0.0 : v);  // no "-0"
  }
  return t;
}

}  // namespace

SvgPlot::SvgPlot(std::string title, std::string x_label, std::string y_label, bool log_x,
                 bool log_y)
    : title_(std::move(title)),
      x_label_(std::move(x_label)),
      y_label_(std::move(y_label)),
      log_x_(log_x),
      log_y_(log_y) {}

void SvgPlot::AddPoints(std::string name, std::vector<double> x, std::vector<double> y,
                        std::string color) {
  layers_.push_back({std::move(name), std::move(x), std::move(y), std::move(color), false});
}

void SvgPlot::AddLine(std::string name, std::vector<double> x, std::vector<double> y,
                      std::string color) {
  layers_.push_back({std::move(name), std::move(x), std::move(y), std::move(color), true});
}

std::string SvgPlot::Render(int width, int height) const {
  std::vector<const std::vector<double>*> xs, ys;
  for (const Layer& l : layers_) {
    xs.push_back(&l.x);
    ys.push_back(&l.y);
  }
  const Axis ax = MakeAxis(xs, log_x_), ay = MakeAxis(ys, log_y_);
  const double left = 70, right = 20, top = 30, bottom = 50;
  const double pw = width - left - right, ph = height - top - bottom;
  auto px = [&](double v) { return left + ax.Map(v) * pw; };
  auto py = [&](double v) { return top + (1 - ay.Map(v)) * ph; };

  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n"
      "<text x=\"{}\" y=\"18\" text-anchor=\"middle\" font-size=\"13\">{}</text>\n"
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#888\"/>\n",
      width, height, width / 2, HtmlEscape(title_), left, top, pw, ph);
  for (double t : Ticks(ax)) {
    s += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#eee\"/>"
        "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
        px(t), top, top + ph, top + ph + 14, FormatNumber(t, 6));
  }
  for (double t : Ticks(ay)) {
    s += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#eee\"/>"
        "<text x=\"{3}\" y=\"{1:.1f}\" text-anchor=\"end\" dy=\"4\">{4}</text>\n",
        left, py(t), left + pw, left - 4, FormatNumber(t, 6));
  }
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}{}</text>\n", left + pw / 2,
                   height - 10, HtmlEscape(x_label_), log_x_ ? " (log)" : "");
  s += fmt::format(
      "<text x=\"14\" y=\"{0}\" text-anchor=\"middle\" transform=\"rotate(-90 14 {0})\">{1}{2}"
      "</text>\n",
      top + ph / 2, HtmlEscape(y_label_), log_y_ ? " (log)" : "");
  int legend = 0;
  for (const Layer& l : layers_) {
    if (l.line) {
      std::string pts;
      for (size_t i = 0; i < l.x.size() && i < l.y.size(); ++i) {
        if (!ax.Valid(l.x[i]) || !ay.Valid(l.y[i])) continue;
        pts += fmt::format("{:.1f},{:.1f} ", px(l.x[i]), py(l.y[i]));
      }
      s += fmt::format(
          "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>\n", l.color,
          pts);
    } else {
      for (size_t i = 0; i < l.x.size() && i < l.y.size(); ++i) {
        if (!ax.Valid(l.x[i]) || !ay.Valid(l.y[i])) continue;
        s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"{}\"/>\n",
                         px(l.x[i]), py(l.y[i]), l.color);
      }
    }
    const double ly = top + 12 + 14 * legend++;
    s += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"3\" fill=\"{}\"/>"
        "<text x=\"{}\" y=\"{}\">{}</text>\n",
        left + pw - 190, ly - 4, l.color, left + pw - 175, ly, HtmlEscape(l.name));
  }
  return s + "</svg>\n";
}

}  // namespace batchlab::analysis
