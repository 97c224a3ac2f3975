// The report's per-run line charts (report_charts.h): a metric's curve per run
// (loss, test loss, test accuracy, learning rate) and the smoothed noise scale
// B_simple per run, over samples seen. Internal to analysis/report (StudyCharts
// orders them).
#ifndef BATCHLAB_ANALYSIS_REPORT_RUN_CHARTS_H_
#define BATCHLAB_ANALYSIS_REPORT_RUN_CHARTS_H_

#include <optional>

#include "analysis/report/report_charts.h"

namespace batchlab::analysis::charts {

struct CurveInfo {
  const char* metric;  // the logged metric ("loss", "test_accuracy", "lr", ...)
  const char* title;
  const char* axis;  // the y axis's title
  bool log_y;
};

std::optional<Chart> CurveChart(const Study& s,
                                const CurveInfo& info);  // "curve_<metric>"
std::optional<Chart> GnsChart(const Study& s);           // "gns"

}  // namespace batchlab::analysis::charts

#endif  // BATCHLAB_ANALYSIS_REPORT_RUN_CHARTS_H_
