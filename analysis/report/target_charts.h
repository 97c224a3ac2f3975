// The report's charts of reaching the target (report_charts.h): steps to target
// against batch size with the B_crit fit, time against compute with its Pareto
// frontier, and the projected frontier of the step-time model. Internal to
// analysis/report (StudyCharts orders them).
#ifndef BATCHLAB_ANALYSIS_REPORT_TARGET_CHARTS_H_
#define BATCHLAB_ANALYSIS_REPORT_TARGET_CHARTS_H_

#include <optional>

#include "analysis/report/report_charts.h"

namespace batchlab::analysis::charts {

std::optional<Chart> StepsChart(const Study& s);       // "steps_to_target"
std::optional<Chart> ParetoChart(const Study& s);      // "pareto"
std::optional<Chart> ProjectionChart(const Study& s);  // "projection"

}  // namespace batchlab::analysis::charts

#endif  // BATCHLAB_ANALYSIS_REPORT_TARGET_CHARTS_H_
