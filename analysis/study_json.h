// The sections of a study as JSON: what `batchlab analyze ... --format json` prints, for scripts.
// Non-finite numbers become null; a section that could not be computed has "error": message.
//
//   nlohmann::json j = CritJson(AnalyzeCrit(target, gns, opt));
//   fmt::print("{}\n", j.dump(2));
#ifndef BATCHLAB_ANALYSIS_STUDY_JSON_H_
#define BATCHLAB_ANALYSIS_STUDY_JSON_H_

#include <nlohmann/json.hpp>

#include "analysis/study.h"

namespace batchlab::analysis {

// `include_series`: also the smoothed per-step series of every run (large).
nlohmann::json GnsJson(const GnsSection& gns, const StudyOptions& options, bool include_series);
nlohmann::json TargetJson(const TargetSection& target);
nlohmann::json CritJson(const CritSection& crit);
nlohmann::json ParetoJson(const ParetoSection& pareto);
nlohmann::json ScalingJson(const ScalingSection& scaling);
nlohmann::json ProjectionJson(const ProjectionSection& projection);
// The step-time model's check against the measured runs (in-sample and held out).
nlohmann::json ModelCheckJson(const ModelCheck& check);

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_STUDY_JSON_H_
