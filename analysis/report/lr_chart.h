// The report's learning-rate chart (report_charts.h): the best LR per batch size with its
// interval (open symbols: the best at the edge of the LRs tried, so the optimum lies beyond it)
// and the measured law η_opt = c·B^α over the batch sizes it was fitted on (docs/methods.md §11).
// Internal to analysis/report (StudyCharts orders it).
#ifndef BATCHLAB_ANALYSIS_REPORT_LR_CHART_H_
#define BATCHLAB_ANALYSIS_REPORT_LR_CHART_H_

#include <optional>

#include "analysis/report/report_charts.h"

namespace batchlab::analysis::charts {

// "lr_law"; nullopt when the study varied no LR or no batch size has a best LR.
std::optional<Chart> LrLawChart(const Study& s);

}  // namespace batchlab::analysis::charts

#endif  // BATCHLAB_ANALYSIS_REPORT_LR_CHART_H_
