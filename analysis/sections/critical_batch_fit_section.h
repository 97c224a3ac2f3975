// `batchlab analyze crit`: the critical batch size, the fit of S = S_min (1 + B_crit/B) to the best
// steps to target per batch size with its bootstrap interval, the region of each batch size and
// B_simple beside B_crit, as tables and JSON (analysis/estimators/critical_batch_fit.h for the fit).
//
//   CritSection crit = AnalyzeCrit(target, gns, opt);
//   for (const Table& t : CritTables(crit)) fmt::print("{}\n", t.ToText());
//   nlohmann::json j = CritJson(crit);
#ifndef BATCHLAB_ANALYSIS_SECTIONS_CRITICAL_BATCH_FIT_SECTION_H_
#define BATCHLAB_ANALYSIS_SECTIONS_CRITICAL_BATCH_FIT_SECTION_H_

#include <cstdint>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/estimators/critical_batch_fit.h"
#include "analysis/sections/gns_section.h"
#include "analysis/data/run_data.h"
#include "analysis/sections/study_options.h"
#include "analysis/data/table.h"
#include "analysis/sections/target_section.h"
#include "base/status.h"

namespace batchlab::analysis {

struct CritRegion {
  int64_t batch_size = 0;
  Region region = Region::kDiminishingReturns;
};

struct CritSection {
  Status status;  // of the fit
  CritFit fit;    // valid when status.ok()
  std::vector<CritRegion> regions;
  std::optional<double> b_simple;        // GnsSection::median
  std::optional<double> b_simple_ratio;  // B_simple / B_crit (the paper: within ~10×)
  // Language models: tokens per sequence when every run stored tokens_per_step > 0 (see
  // TokensPerSequence); B_crit, E_min and B_simple are then also given in tokens.
  std::optional<double> tokens_per_sequence;
};
CritSection AnalyzeCrit(const TargetSection& target, const GnsSection& gns,
                        const StudyOptions& options);

// Tokens per sequence (tokens_per_step / batch_size) when the sweep has runs, every run that
// logged anything (a pending run has no facts yet) stored tokens_per_step > 0 (a language model's
// start line) and all agree on it; nullopt otherwise (not a language model, a run without the fact,
// or different contexts: no mixed units). Batch sizes and samples are in sequences; × this gives
// tokens.
std::optional<double> TokensPerSequence(const SweepData& sweep);
std::vector<Table> CritTables(const CritSection& crit);
nlohmann::json CritJson(const CritSection& crit);

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_SECTIONS_CRITICAL_BATCH_FIT_SECTION_H_
