// The scaling report of one sweep: every analysis section as report.md, report.html (tables plus
// interactive Vega-Lite charts, one self-contained file; report_html.h, report_charts.h) and one
// CSV per table.
//
//   BATCHLAB_ASSIGN_OR_RETURN(SweepData sweep, LoadSweep(db, "quickstart", {}));
//   BATCHLAB_ASSIGN_OR_RETURN(Study study, RunStudy(sweep, StudyOptions{}));
//   BATCHLAB_ASSIGN_OR_RETURN(auto files, WriteReport(study, "report/"));
//   // files: report/report.html, report/report.md, report/steps_to_target.csv, ...
#ifndef BATCHLAB_ANALYSIS_REPORT_REPORT_H_
#define BATCHLAB_ANALYSIS_REPORT_REPORT_H_

#include <string>
#include <vector>

#include "analysis/report/report_html.h"
#include "analysis/sections/sweep_study.h"
#include "analysis/data/table.h"
#include "base/status.h"

namespace batchlab::analysis {

// The headline findings, one sentence each (the report's summary; `batchlab report` prints them).
std::vector<std::string> Summary(const Study& study);

// Every table of the study, in report order.
std::vector<Table> StudyTables(const Study& study);

std::string RenderMarkdown(const Study& study);
// report.html (report_html.cc). Without the charting library installed, the charts are replaced
// by a notice naming the fix (the tables and summary are still there).
std::string RenderHtml(const Study& study, const HtmlOptions& options = {});

// Creates `out_dir` if needed and writes report.md, report.html and <table>.csv files (each
// through a temporary file renamed into place); returns the paths written.
StatusOr<std::vector<std::string>> WriteReport(const Study& study, const std::string& out_dir);

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_REPORT_REPORT_H_
