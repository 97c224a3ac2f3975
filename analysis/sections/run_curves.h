// The per-run training curves the report draws: loss, test loss, test accuracy and the learning
// rate actually used (the runner's `lr` metric, after scaling rule, warmup and schedule), each
// thinned to at most `max_points` points per run (evenly by index, first and last always kept),
// plus what each run spent in total, for drawing runs that never reached the target, and the
// samples (tokens, on a language model's sweep) each run had seen by each step: the charts' x
// axis (a step axis squeezes every large-batch run into the first few steps of a small-batch
// one).
//
//   CurvesSection curves = CollectCurves(sweep, /*max_points=*/400);
//   for (const RunCurves& r : curves.runs)
//     if (const Series* acc = r.Find("test_accuracy")) fmt::print("{} {}\n", r.label, acc->size());
#ifndef BATCHLAB_ANALYSIS_SECTIONS_RUN_CURVES_H_
#define BATCHLAB_ANALYSIS_SECTIONS_RUN_CURVES_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analysis/data/run_data.h"

namespace batchlab::analysis {

// The metrics drawn as curves, in report order.
const std::vector<std::string>& CurveMetrics();  // loss, test_loss, test_accuracy, lr

struct RunCurves {
  std::string run_id;
  std::string label;  // RunLabel()
  std::string state;
  int64_t batch_size = 0;
  int world_size = 1;
  int64_t last_step = 0;     // the last step any metric was logged at (0: nothing logged)
  double total_seconds = 0;  // Σ step_seconds, else the last `seconds`; 0 when unknown
  std::map<std::string, Series> curves;  // CurveMetrics() names the run logged, thinned
  Series samples;              // the run's logged `samples` metric (step -> samples seen), unthinned
  double tokens_per_sample = 1;  // tokens per sample when CurvesSection::seen_unit is "tokens"

  // Samples (tokens) seen by the end of `step`: the logged count, interpolated between logged
  // steps and continued at batch_size per step past them; step × batch_size when none was logged.
  double SeenAt(int64_t step) const;

  const Series* Find(const std::string& metric) const {
    auto it = curves.find(metric);
    return it == curves.end() ? nullptr : &it->second;
  }
};

struct CurvesSection {
  std::vector<RunCurves> runs;  // every run of the sweep, in run order
  // What RunCurves::SeenAt counts: "tokens" on a language model's sweep (every run stored the same
  // tokens per sequence: TokensPerSequence), else "samples".
  std::string seen_unit = "samples";
};

CurvesSection CollectCurves(const SweepData& sweep, size_t max_points);

// At most `max_points` points of `s`, evenly spaced by index, first and last kept.
Series Thin(const Series& s, size_t max_points);

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_SECTIONS_RUN_CURVES_H_
