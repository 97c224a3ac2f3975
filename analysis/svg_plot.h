// A minimal SVG chart for the HTML report: points and polylines on linear or log axes, with
// ticks, axis labels and a legend. No scripts, no external files: the report stays one file.
//
//   SvgPlot plot("Steps to target vs batch size", "batch size", "steps", /*log_x=*/true,
//                /*log_y=*/true);
//   plot.AddPoints("best runs", xs, ys, "#1f77b4");
//   plot.AddLine("fit S_min(1 + B_crit/B)", fx, fy, "#d62728");
//   std::string svg = plot.Render(640, 400);
#ifndef BATCHLAB_ANALYSIS_SVG_PLOT_H_
#define BATCHLAB_ANALYSIS_SVG_PLOT_H_

#include <string>
#include <vector>

namespace batchlab::analysis {

class SvgPlot {
 public:
  SvgPlot(std::string title, std::string x_label, std::string y_label, bool log_x, bool log_y);

  void AddPoints(std::string name, std::vector<double> x, std::vector<double> y, std::string color);
  void AddLine(std::string name, std::vector<double> x, std::vector<double> y, std::string color);

  // The <svg> element; points that are non-finite (or <= 0 on a log axis) are left out.
  std::string Render(int width, int height) const;

 private:
  struct Layer {
    std::string name;
    std::vector<double> x, y;
    std::string color;
    bool line = false;
  };
  std::string title_, x_label_, y_label_;
  bool log_x_, log_y_;
  std::vector<Layer> layers_;
};

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_SVG_PLOT_H_
