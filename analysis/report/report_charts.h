// The report's charts as Vega-Lite specifications (https://vega.github.io/vega-lite/), each with
// the one-sentence reading written from the study's numbers. report_html.cc embeds them in
// report.html and renders them with vega-embed; the browser test counts their marks.
//
// Every chart: hover shows the run id and its configuration; every series is drawn (no cap) and
// coloured by batch size, with a legend whose entries toggle their series (click; shift-click
// adds); runs that never reached the target are drawn at what they spent, as open symbols; rank
// counts K are shapes (points) or dashes (lines) when a study has several; per-run curves are
// drawn over samples (tokens) seen, with the step axis in the spec's usermeta.x_axes (the page
// draws the toggle); frontier labels are placed where they overlap nothing (explicit log domains).
// Layers are named (`"name": "runs"` renders as the SVG group class `runs_marks`), so a test
// can count the marks of each.
//
//   for (const Chart& c : StudyCharts(study))
//     fmt::print("{}: {}\n{}\n", c.id, c.reading, c.spec.dump());
#ifndef BATCHLAB_ANALYSIS_REPORT_REPORT_CHARTS_H_
#define BATCHLAB_ANALYSIS_REPORT_REPORT_CHARTS_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/report/report.h"

namespace batchlab::analysis {

struct Chart {
  std::string id;  // "steps_to_target", "pareto", "curve_loss", ... (unique, [a-z_])
  std::string title;
  std::string reading;  // one sentence from the numbers
  nlohmann::json spec;  // Vega-Lite, data inline
};

// The charts the study has data for, in report order: steps to target, Pareto, loss, test loss,
// test accuracy, learning rate, B_simple, the LR law, strong scaling, projection.
std::vector<Chart> StudyCharts(const Study& study);

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_REPORT_REPORT_CHARTS_H_
