// Per-run curves for the report (see run_curves.h).
#include "analysis/run_curves.h"

#include <algorithm>

namespace batchlab::analysis {

const std::vector<std::string>& CurveMetrics() {
  static const std::vector<std::string> kNames = {"loss", "test_loss", "test_accuracy", "lr"};
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

CurvesSection CollectCurves(const SweepData& sweep, size_t max_points) {
  CurvesSection out;
  for (const RunData& run : sweep.runs) {
    RunCurves r;
    r.run_id = run.id;
    r.label = RunLabel(run);
    r.state = run.state;
    r.batch_size = run.batch_size;
    r.world_size = run.world_size;
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
