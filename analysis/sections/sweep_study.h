// Every analysis section of one sweep, computed together (`Study`, RunStudy): what the report
// (report.h), its charts (report_charts.h) and the live page (`batchlab ui`) render. Each
// section is computed on its own (study.h) and carries its own Status.
//
//   BATCHLAB_ASSIGN_OR_RETURN(SweepData sweep, LoadSweep(db, "quickstart", {}));
//   BATCHLAB_ASSIGN_OR_RETURN(Study study, RunStudy(sweep, StudyOptions{}));
//   if (!study.target_status.ok()) ...  // no target: the target sections say why they are empty
#ifndef BATCHLAB_ANALYSIS_SECTIONS_SWEEP_STUDY_H_
#define BATCHLAB_ANALYSIS_SECTIONS_SWEEP_STUDY_H_

#include <map>
#include <string>

#include "analysis/sections/critical_batch_branched_section.h"
#include "analysis/sections/lr_law_section.h"
#include "analysis/sections/recommendation.h"
#include "analysis/sections/run_curves.h"
#include "analysis/sections/study.h"
#include "analysis/sections/sync_modes.h"
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
  LrSection lr;    // the measured LR law (shown when some batch size tried several LRs)
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

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_SECTIONS_SWEEP_STUDY_H_
