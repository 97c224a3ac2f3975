// `batchlab analyze lr` and the report's learning-rate section: the best LR per batch size with
// its interval and the measured law η_opt = c·B^α (analysis/estimators/lr_law.h), as tables and
// JSON. The LR is the spec's LR-search path, else the swept "lr.base"; the score is the steps to
// the study's target (Shallue et al. 2018).
//
//   LrSection s = AnalyzeLr(sweep, target, options);
//   for (const Table& t : LrTables(s)) fmt::print("{}", t.ToText());
//   if (const LrLaw* law = s.MainLaw()) ... law->LrAt(1024) ...
#ifndef BATCHLAB_ANALYSIS_SECTIONS_LR_LAW_SECTION_H_
#define BATCHLAB_ANALYSIS_SECTIONS_LR_LAW_SECTION_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/data/table.h"
#include "analysis/estimators/lr_law.h"
#include "analysis/sections/study_options.h"
#include "analysis/sections/target_section.h"
#include "base/status.h"

namespace batchlab::analysis {

struct LrSection {
  Status status;         // FailedPrecondition: no run varied the LR, or no target
  std::string path;      // the LR's param ("lr.base")
  std::string target;    // "test_accuracy>=0.85"
  bool varied = false;   // some batch size tried 2 or more LRs (the report shows the section)
  std::vector<LrLaw> laws;  // one per combination of the other swept values
  // The first fitted law (nullptr: none), what the recommendation reads.
  const LrLaw* MainLaw() const;
};

LrSection AnalyzeLr(const SweepData& sweep, const TargetSection& target,
                    const StudyOptions& options);
std::vector<Table> LrTables(const LrSection& s);
nlohmann::json LrJson(const LrSection& s);
std::vector<std::string> LrLines(const LrSection& s);
// The recommendation's LR sentence for `batch` from the main law: "LR for B=1024: 0.31 [0.25,
// 0.38], measured (η_opt = c·B^α, α = 0.52 [0.41, 0.63]); the linear rule from B=32's best LR
// would give 0.8." Empty without a law (then the rule the user typed stands, unmeasured).
std::string LrRecommendation(const LrSection& s, int64_t batch);

struct RecommendationSection;  // recommendation.h
// Sets r's LR sentences from the main law: `lr` for the measured choice's batch and
// `projected_lr` for the projected choice's ("Projection: LR for B=...: ..., from the measured
// law"), each empty without a law or without that choice — then the rule the user typed stands.
void SetRecommendationLrs(const LrSection& s, RecommendationSection* r);

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_SECTIONS_LR_LAW_SECTION_H_
