// `batchlab analyze project`: a MODEL, not a measurement. The time per step and to the target on
// K nodes of a cluster profile, from the step-time model fitted to the measured runs (per model,
// with this machine's alpha-beta fit) and its check against them, as tables and JSON
// (analysis/estimators/projection.h for the projection, step_model.h for the model and its check).
//
//   ProjectionSection p = AnalyzeProjection(sweep, target, scaling, opt);
//   for (const Table& t : ProjectionTables(p)) fmt::print("{}\n", t.ToText());
//   nlohmann::json j = ProjectionJson(p);
#ifndef BATCHLAB_ANALYSIS_SECTIONS_PROJECTION_SECTION_H_
#define BATCHLAB_ANALYSIS_SECTIONS_PROJECTION_SECTION_H_

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/estimators/projection.h"
#include "analysis/data/run_data.h"
#include "analysis/sections/scaling_section.h"
#include "analysis/estimators/step_model.h"
#include "analysis/sections/study_options.h"
#include "analysis/data/table.h"
#include "analysis/sections/target_section.h"
#include "base/status.h"

namespace batchlab::analysis {

struct ProjectionSection {
  Status status;  // profile unknown, no timings, no model size, no target reached
  ClusterProfile profile;
  ComputeModel compute;  // pooled over every measured run (the fallback of a batch size whose
                         // best configuration's model has no timings)
  StepModel model;       // per model, and this machine's α–β fit
  ModelCheck check;      // the model against the measured runs: in-sample and held out
  int64_t parameters = 0;
  double min_local_batch = 0;  // the floor on projected local batches (StudyOptions)
  std::vector<ProjectedPoint> points;
};
ProjectionSection AnalyzeProjection(const SweepData& sweep, const TargetSection& target,
                                    const ScalingSection& scaling, const StudyOptions& options);
std::vector<Table> ProjectionTables(const ProjectionSection& projection);
nlohmann::json ProjectionJson(const ProjectionSection& projection);
// The step-time model's check against the measured runs (in-sample and held out).
nlohmann::json ModelCheckJson(const ModelCheck& check);

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_SECTIONS_PROJECTION_SECTION_H_
