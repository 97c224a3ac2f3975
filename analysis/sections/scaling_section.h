// `batchlab analyze scaling`: the throughput of every run, strong and weak scaling efficiency with
// intervals, the communication fraction and the ring-allreduce alpha-beta fit, as tables and JSON
// (analysis/estimators/scaling.h for the estimators).
//
//   ScalingSection scaling = AnalyzeScaling(sweep, opt);
//   for (const Table& t : ScalingTables(scaling)) fmt::print("{}\n", t.ToText());
//   nlohmann::json j = ScalingJson(scaling);
#ifndef BATCHLAB_ANALYSIS_SECTIONS_SCALING_SECTION_H_
#define BATCHLAB_ANALYSIS_SECTIONS_SCALING_SECTION_H_

#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/data/run_data.h"
#include "analysis/estimators/scaling.h"
#include "analysis/sections/study_options.h"
#include "analysis/data/table.h"
#include "base/status.h"

namespace batchlab::analysis {

struct ScalingSection {
  std::vector<RunTiming> timings;
  std::vector<ScalingRow> strong;
  std::vector<ScalingRow> weak;
  Status alpha_beta_status;
  AlphaBetaFit alpha_beta;
};
ScalingSection AnalyzeScaling(const SweepData& sweep, const StudyOptions& options);
std::vector<Table> ScalingTables(const ScalingSection& scaling);
nlohmann::json ScalingJson(const ScalingSection& scaling);

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_SECTIONS_SCALING_SECTION_H_
