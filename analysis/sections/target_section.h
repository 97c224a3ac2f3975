// `batchlab analyze target`: the steps, samples, seconds and compute to the target per run, the
// best per batch size over the other swept values, and what an LR search found, as tables and
// JSON (analysis/estimators/steps_to_target.h for the hits, compute_unit.h for the unit of compute).
//
//   BATCHLAB_ASSIGN_OR_RETURN(TargetSection target, AnalyzeTarget(sweep, opt));
//   for (const Table& t : TargetTables(target)) fmt::print("{}\n", t.ToText());
//   nlohmann::json j = TargetJson(target);
#ifndef BATCHLAB_ANALYSIS_SECTIONS_TARGET_SECTION_H_
#define BATCHLAB_ANALYSIS_SECTIONS_TARGET_SECTION_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/estimators/compute_unit.h"
#include "analysis/estimators/lr_found.h"
#include "analysis/data/run_data.h"
#include "analysis/estimators/steps_to_target.h"
#include "analysis/sections/study_options.h"
#include "analysis/data/table.h"
#include "base/status.h"

namespace batchlab::analysis {

// The target to use: options.target, else the sweep's; InvalidArgument when neither is set.
StatusOr<Target> ResolveTarget(const SweepData& sweep, const StudyOptions& options);

// InvalidArgument naming --target when the sweep's runs logged metrics but none logged
// `target.metric` (a misspelt metric would otherwise count every run as never reaching it).
Status CheckTargetMetric(const SweepData& sweep, const Target& target);

struct TargetSection {
  Target target;
  std::vector<TargetHit> hits;    // one per run, in run order
  std::vector<BatchBest> best;    // per batch size
  ComputeBasis compute;           // the unit of compute to target: FLOPs or rank-seconds
  std::string lr_search_path;     // the spec's LR search path; empty without a search
  std::vector<LrFound> lr_found;  // what the search found per batch size
  // Why the target may be unreachable: outside the range its metric can take (an accuracy is a
  // fraction) or has taken in this sweep (naming the best observed value). Printed by the CLI as
  // warnings, shown in the report.
  std::vector<std::string> warnings;
};
StatusOr<TargetSection> AnalyzeTarget(const SweepData& sweep, const StudyOptions& options);

// The warnings of TargetSection::warnings for `target` over `sweep`'s runs.
std::vector<std::string> TargetRangeWarnings(const SweepData& sweep, const Target& target);
std::vector<Table> TargetTables(const TargetSection& target);
nlohmann::json TargetJson(const TargetSection& target);
// One run's hit; `compute` is in `unit` (the section's compute_unit), rank_seconds and flops are
// both kept.
nlohmann::json HitJson(const TargetHit& h, ComputeUnit unit);

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_SECTIONS_TARGET_SECTION_H_
