// `batchlab analyze pareto`: the Pareto frontier of time against compute to the target over the
// runs that reached it, as tables and JSON (analysis/estimators/pareto.h for the frontier).
//
//   ParetoSection pareto = AnalyzePareto(target);  // keeps pointers into `target`
//   for (const Table& t : ParetoTables(pareto)) fmt::print("{}\n", t.ToText());
//   nlohmann::json j = ParetoJson(pareto);
#ifndef BATCHLAB_ANALYSIS_SECTIONS_PARETO_SECTION_H_
#define BATCHLAB_ANALYSIS_SECTIONS_PARETO_SECTION_H_

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/estimators/compute_unit.h"
#include "analysis/estimators/pareto.h"
#include "analysis/estimators/scaling.h"
#include "analysis/estimators/steps_to_target.h"
#include "analysis/data/table.h"
#include "analysis/sections/target_section.h"

namespace batchlab::analysis {

struct ParetoSection {
  ComputeBasis compute;  // the unit of points[i].compute (the target section's)
  std::vector<ParetoPoint> points;
  std::vector<const TargetHit*> hits;  // hits[i] is the run of points[i]
  std::vector<size_t> frontier;        // indices into points, frontier order
  // The one comparability rule (ConditionsDiffer), set by MarkIncomparableTimings: each point's
  // run against the recommendation's baseline run (the smallest batch on the fewest ranks, then
  // the fastest); why its timing is not comparable, empty when it is. Empty vector: not checked.
  std::vector<std::string> incomparable;  // indexed like points
  std::string baseline_label;
};
// Keeps pointers into `target`, which must outlive the section.
ParetoSection AnalyzePareto(const TargetSection& target);
void MarkIncomparableTimings(const std::vector<RunTiming>& timings, const TargetSection& target,
                             ParetoSection* pareto);
std::vector<Table> ParetoTables(const ParetoSection& pareto);
nlohmann::json ParetoJson(const ParetoSection& pareto);

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_SECTIONS_PARETO_SECTION_H_
