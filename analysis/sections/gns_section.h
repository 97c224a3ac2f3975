// `batchlab analyze gns`: the gradient noise scale B_simple per run over a step window, with its
// bootstrap interval and smoothed series, its spread across seeds and the sweep's median (the
// B_simple compared with B_crit), as tables and JSON (analysis/estimators/gradient_noise.h for the
// estimator).
//
//   GnsSection gns = AnalyzeGns(sweep, opt);
//   for (const Table& t : GnsTables(gns, opt)) fmt::print("{}\n", t.ToText());
//   nlohmann::json j = GnsJson(gns, opt, /*include_series=*/false);
#ifndef BATCHLAB_ANALYSIS_SECTIONS_GNS_SECTION_H_
#define BATCHLAB_ANALYSIS_SECTIONS_GNS_SECTION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/estimators/gradient_noise.h"
#include "analysis/data/run_data.h"
#include "analysis/sections/study_options.h"
#include "analysis/data/table.h"
#include "base/status.h"

namespace batchlab::analysis {

struct GnsRun {
  std::string run_id;
  std::string label;
  std::string config_key;  // without seed
  int64_t batch_size = 0;
  int world_size = 1;
  Status status;         // why there is no estimate (no gns_* metrics, noise dominates, ...)
  GnsEstimate estimate;  // valid when status.ok()
  std::vector<GnsPoint> series;
  std::optional<GnsPoint> smoothed_end;  // the series at the last step of the window
};

// The step window of the estimate after applying at_step.
std::pair<int64_t, int64_t> GnsWindow(const StudyOptions& options);

struct GnsConfigSpread {
  std::string config_key;
  std::string label;
  SeedSpread spread;  // of the per-seed window estimates
};

struct GnsSection {
  std::vector<GnsRun> runs;            // every run that logged gns_* metrics
  std::vector<GnsConfigSpread> seeds;  // configurations with >= 2 seeds
  // Median and range of the per-run estimates: the sweep-level B_simple compared with B_crit.
  std::optional<double> median, min, max;
};
GnsSection AnalyzeGns(const SweepData& sweep, const StudyOptions& options);
std::vector<Table> GnsTables(const GnsSection& gns, const StudyOptions& options);
// `include_series`: also the smoothed per-step series of every run (large).
nlohmann::json GnsJson(const GnsSection& gns, const StudyOptions& options, bool include_series);

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_SECTIONS_GNS_SECTION_H_
