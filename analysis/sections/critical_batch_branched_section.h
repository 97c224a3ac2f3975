// `batchlab analyze cbs`: the critical batch size over training of a branch study, as tables and
// JSON (analysis/estimators/critical_batch_branched.h for the estimator). Per branch point: each k's smoothed loss and gap
// with its interval, Merrill's ε rule, the crossing with its interval (or "≥ largest", censored),
// the trunk's B_simple at that point (McCandlish et al. 2018, on the same axis), and a reading;
// then the batch-size schedule the curve recommends with its predicted saving in steps.
//
//   CbsSectionOptions o;   // metric test_loss; ε and evaluations the spec's (0.01, 1); margin 1
//   CbsSection s = AnalyzeCbs(sweep, o);
//   fmt::print("{}", CbsTables(s)[0].ToText());  nlohmann::json j = CbsJson(s);
#ifndef BATCHLAB_ANALYSIS_SECTIONS_CRITICAL_BATCH_BRANCHED_SECTION_H_
#define BATCHLAB_ANALYSIS_SECTIONS_CRITICAL_BATCH_BRANCHED_SECTION_H_

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/estimators/critical_batch_branched.h"
#include "analysis/data/run_data.h"
#include "analysis/data/table.h"
#include "base/run_protocol.h"

namespace batchlab::analysis {

struct CbsSectionOptions {
  std::string metric = protocol::kMetricTestLoss;
  // The last evaluations averaged per branch (the same samples for every k) and the tolerance ε
  // (cbs.tolerance): unset, the spec's branch.smooth_evals / branch.tolerance, else 1 and 0.01.
  std::optional<int> smooth;
  std::optional<double> tolerance;
  double margin = 1.0;  // the schedule switches when B_crit (low end) >= margin x next batch
  double beta = 0.99;   // EMA of the trunk's noise-scale series
  CbsOptions cbs;
};

struct CbsTrunkPoint {
  CbsPoint point;
  std::optional<double> b_simple;  // the trunk's smoothed B_simple at the point's step
};

struct CbsSection {
  std::vector<CbsTrunkPoint> points;  // every trunk's, by trunk then samples
  std::vector<std::string> problems;  // points that could not be estimated, and why
  std::optional<BatchSchedule> schedule;  // of the first trunk
  int64_t trunk_samples = 0;              // that trunk's budget in samples (its samples seen)
  std::string metric;
  double tolerance = 0;  // ε and the evaluations averaged per branch that the estimate used
  int smooth_evals = 1;
};

CbsSection AnalyzeCbs(const SweepData& sweep, const CbsSectionOptions& options);
// `questions`: end the curve's notes with which question each critical-batch number answers
// (estimate_questions.h; the report, which prints them under the from-scratch fit, passes false).
std::vector<Table> CbsTables(const CbsSection& s, bool questions = true);
nlohmann::json CbsJson(const CbsSection& s);
// One-sentence readings: the curve, and the schedule's saving.
std::vector<std::string> CbsLines(const CbsSection& s);

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_SECTIONS_CRITICAL_BATCH_BRANCHED_SECTION_H_
