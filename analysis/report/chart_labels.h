// Labels beside points that overlap nothing, for the time-vs-compute charts
// (report_charts.h). A label's place is chosen here, in pixels, so those
// charts' log scales get explicit domains (LogScale, LogAxis) and every label
// its own position; a label with no free place is left out (the tooltip and the
// table still name its point).
//
//   FrontierLabels f = PlaceFrontierLabels({&points}, front);   // front sorted
//   by compute json x = LogAxis("compute", "compute", f.xs), y =
//   LogAxis("seconds", "seconds", f.ys); AddFrontier(front, f.placed, x, y,
//   layers);
#ifndef BATCHLAB_ANALYSIS_REPORT_CHART_LABELS_H_
#define BATCHLAB_ANALYSIS_REPORT_CHART_LABELS_H_

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace batchlab::analysis::charts {

constexpr double kPlotWidth = 620,
                 kPlotHeight = 320;  // Base() (chart_encoding.h)

struct LogScale {
  double lo = 1, hi = 10, px = 1;  // domain and range [0, px]
  double Pixel(double v) const;
  double Value(double p) const;
  nlohmann::json Domain() const { return nlohmann::json::array({lo, hi}); }
};

// The log domain of `values` widened by `pad` of its extent (in log space) at
// each end.
LogScale PaddedLog(const std::vector<double>& values, double px, double pad);

// Gives each row of `labelled` (fields xf, yf and "tag") a place for its tag
// beside its point that overlaps no other label and no point of `points` (x, y
// pairs) and stays in the plot: below-left first (no frontier point has another
// point there), then the other sides. Returns the rows that got one, with
// "label_x", "label_y": the label's centre in data coordinates.
nlohmann::json PlaceLabels(const nlohmann::json& labelled,
                           const std::vector<std::pair<double, double>>& points, const LogScale& xs,
                           const LogScale& ys, const std::string& xf, const std::string& yf);

// A log axis over an explicit domain (PlaceLabels' pixels hold only then).
nlohmann::json LogAxis(const std::string& field, const std::string& title, const LogScale& sc);

// The text layer of PlaceLabels' rows: each tag centred where it was placed.
nlohmann::json LabelLayer(const nlohmann::json& placed, nlohmann::json x, nlohmann::json y);

// A time-vs-compute chart's scales (x: "compute", y: "seconds", padded around
// every point of `point_rows`) and its frontier's labels placed among those
// points.
struct FrontierLabels {
  LogScale xs, ys;
  nlohmann::json placed;
};
FrontierLabels PlaceFrontierLabels(std::initializer_list<const nlohmann::json*> point_rows,
                                   const nlohmann::json& front);

// The frontier, joined in red in order of compute, and its labels (none when
// `front` is empty).
void AddFrontier(const nlohmann::json& front, const nlohmann::json& placed, const nlohmann::json& x,
                 const nlohmann::json& y, nlohmann::json& layers);

}  // namespace batchlab::analysis::charts

#endif  // BATCHLAB_ANALYSIS_REPORT_CHART_LABELS_H_
