// Per-run curves for the report (see run_curves.h).
#include "analysis/sections/run_curves.h"

#include <algorithm>

#include "analysis/sections/critical_batch_fit_section.h"
#include "base/run_protocol.h"

namespace batchlab::analysis {

const std::vector<std::string>& CurveMetrics() {
  static const std::vector<std::string> kNames = {protocol::kMetricLoss, protocol::kMetricTestLoss,
                                                  protocol::kMetricTestAccuracy, "lr"};
  return kNames;
}

Series Thin(const Series& s, size_t max_points) {
  if (s.size() <= max_points || max_points < 2) return s;
  Series out;
  const double stride = static_cast<double>(s.size() - 1) / static_cast<double>(max_points - 1);
  for (size_t i = 0; i < max_points; ++i) {
    const size_t k = std::min(s.size() - 1, static_cast<size_t>(i * stride + 0.5));
    out.steps.push_back(s.steps[k]);
    out.values.push_back(s.values[k]);
  }
  return out;
}

double RunCurves::SeenAt(int64_t step) const {
  const double b = static_cast<double>(batch_size);
  double seen = static_cast<double>(step) * b;
  if (!samples.empty()) {
    const auto it = std::lower_bound(samples.steps.begin(), samples.steps.end(), step);
    const size_t i = static_cast<size_t>(it - samples.steps.begin());
    if (i < samples.size() && samples.steps[i] == step) {
      seen = samples.values[i];
    } else if (i == samples.size()) {  // past the last logged step
      seen = samples.values.back() + static_cast<double>(step - samples.steps.back()) * b;
    } else if (i == 0) {  // before the first: proportionally
      seen = samples.values[0] * static_cast<double>(step) / static_cast<double>(samples.steps[0]);
    } else {
      const double f = static_cast<double>(step - samples.steps[i - 1]) /
                       static_cast<double>(samples.steps[i] - samples.steps[i - 1]);
      seen = samples.values[i - 1] + f * (samples.values[i] - samples.values[i - 1]);
    }
  }
  return seen * tokens_per_sample;
}

CurvesSection CollectCurves(const SweepData& sweep, size_t max_points) {
  CurvesSection out;
  const std::optional<double> tokens = TokensPerSequence(sweep);
  if (tokens) out.seen_unit = "tokens";
  for (const RunData& run : sweep.runs) {
    RunCurves r;
    r.run_id = run.id;
    r.label = RunLabel(run);
    r.state = run.state;
    r.batch_size = run.batch_size;
    r.world_size = run.world_size;
    if (const Series* seen = run.Metric("samples"); seen != nullptr) r.samples = *seen;
    if (tokens) r.tokens_per_sample = *tokens;
    for (const auto& [name, series] : run.metrics) {
      if (!series.empty()) r.last_step = std::max(r.last_step, series.steps.back());
    }
    if (const Series* step_s = run.Metric("step_seconds"); step_s != nullptr) {
      for (double v : step_s->values) r.total_seconds += v;
    } else if (const Series* secs = run.Metric("seconds"); secs != nullptr && !secs->empty()) {
      r.total_seconds = secs->values.back();
    }
    for (const std::string& name : CurveMetrics()) {
      if (const Series* s = run.Metric(name); s != nullptr && !s->empty()) {
        r.curves[name] = Thin(*s, max_points);
      }
    }
    out.runs.push_back(std::move(r));
  }
  return out;
}

}  // namespace batchlab::analysis
