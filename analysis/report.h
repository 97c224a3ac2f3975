// The scaling report of one sweep: every analysis section as report.md, report.html (tables plus
// interactive Vega-Lite charts, one self-contained file; report_html.h, report_charts.h) and one
// CSV per table.
//
//   BATCHLAB_ASSIGN_OR_RETURN(SweepData sweep, LoadSweep(db, "quickstart", {}));
//   BATCHLAB_ASSIGN_OR_RETURN(Study study, RunStudy(sweep, StudyOptions{}));
//   BATCHLAB_ASSIGN_OR_RETURN(auto files, WriteReport(study, "report/"));
//   // files: report/report.html, report/report.md, report/steps_to_target.csv, ...
#ifndef BATCHLAB_ANALYSIS_REPORT_H_
#define BATCHLAB_ANALYSIS_REPORT_H_

#include <map>
#include <string>
#include <vector>

#include "analysis/cbs_section.h"
#include "analysis/recommendation.h"
#include "analysis/report_html.h"
#include "analysis/run_curves.h"
#include "analysis/study.h"
#include "analysis/sync_modes.h"
#include "analysis/table.h"
#include "base/status.h"

namespace batchlab::analysis {

// Every section of one sweep. Move-only in effect: `pareto` points into `target`.
struct Study {
  std::string sweep;
  int version = 0;
  int runs = 0;
  std::map<std::string, int> states;  // run state -> count
  StudyOptions options;
  GnsSection gns;
  Status target_status;  // not OK when no target was given or configured: target sections empty
  TargetSection target;
  CritSection crit;
  ParetoSection pareto;
  ScalingSection scaling;
  ProjectionSection projection;
  SyncSection sync;                      // shown when the sweep varies the synchronization
  RecommendationSection recommendation;  // empty without a target
  CurvesSection curves;                  // per-run loss, test loss, accuracy and lr, for the charts
  CbsSection cbs;  // a branch study's critical batch size over training (empty: no branches)

  Study() = default;
  Study(Study&&) = default;
  Study& operator=(Study&&) = default;
  Study(const Study&) = delete;
  Study& operator=(const Study&) = delete;
};

// InvalidArgument for a malformed --target. A sweep without any target still gets a study: the
// target-dependent sections (steps to target, B_crit, Pareto, projection) then say why they are
// empty (target_status).
StatusOr<Study> RunStudy(const SweepData& sweep, const StudyOptions& options);

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

#endif  // BATCHLAB_ANALYSIS_REPORT_H_
