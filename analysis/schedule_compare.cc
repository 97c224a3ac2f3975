// Batch-size schedules against constant batches (see schedule_compare.h).
#include "analysis/schedule_compare.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "analysis/steps_to_target.h"

namespace batchlab::analysis {
namespace {

std::string ScheduleLabel(const RunData& run) {
  std::string label = fmt::format("B={}", run.batch_size);
  const nlohmann::json& s = run.batch_schedule;
  if (!s.is_object()) return label;
  const nlohmann::json at = s.value("at_samples", nlohmann::json::array());
  const nlohmann::json sizes = s.value("batch_sizes", nlohmann::json::array());
  for (size_t i = 0; i < at.size() && i < sizes.size(); ++i) {
    label += fmt::format("→{}@{}", sizes[i].dump(), at[i].dump());
  }
  return label;
}

ScheduleRow RowOf(const RunData& run, const std::optional<Target>& target, int smooth_steps) {
  ScheduleRow row;
  row.label = ScheduleLabel(run);
  row.scheduled = run.batch_schedule.is_object();
  row.first_batch = run.batch_size;
  row.largest_batch = run.batch_size;
  if (row.scheduled) {
    for (const auto& b : run.batch_schedule.value("batch_sizes", nlohmann::json::array())) {
      if (b.is_number_integer()) row.largest_batch = std::max(row.largest_batch, b.get<int64_t>());
    }
  }
  if (const Series* loss = run.Metric("loss"); loss != nullptr && !loss->empty()) {
    row.steps = loss->steps.back();
    const size_t n = std::min(loss->size(), static_cast<size_t>(std::max(smooth_steps, 1)));
    double sum = 0;
    for (size_t i = loss->size() - n; i < loss->size(); ++i) sum += loss->values[i];
    row.final_loss = sum / static_cast<double>(n);
  }
  const Series* samples = run.Metric("samples");
  auto samples_at = [&](int64_t step) -> int64_t {
    if (samples == nullptr) return step * run.batch_size;
    auto it = std::lower_bound(samples->steps.begin(), samples->steps.end(), step);
    if (it == samples->steps.end() || *it != step) return step * run.batch_size;
    return static_cast<int64_t>(samples->values[static_cast<size_t>(it - samples->steps.begin())]);
  };
  row.samples = samples_at(row.steps);
  if (const Series* test = run.Metric("test_loss"); test != nullptr && !test->empty()) {
    row.final_test_loss = test->values.back();
  }
  if (target) {
    if (const Series* m = run.Metric(target->metric); m != nullptr) {
      for (size_t i = 0; i < m->size(); ++i) {
        if (target->Met(m->values[i])) {
          row.target_step = m->steps[i];
          row.target_samples = samples_at(m->steps[i]);
          break;
        }
      }
    }
  }
  return row;
}

std::string Percent(double fraction) { return fmt::format("{:.0f}%", 100 * fraction); }

}  // namespace

ScheduleSection CompareSchedules(const SweepData& sweep, int smooth_steps) {
  std::optional<Target> target;
  if (!sweep.target.empty()) {
    if (StatusOr<Target> t = ParseTarget(sweep.target); t.ok()) target = *t;
  }
  ScheduleSection out;
  for (const RunData& r : sweep.scheduled) out.rows.push_back(RowOf(r, target, smooth_steps));
  std::vector<ScheduleRow> constant;
  for (const RunData& r : sweep.runs) constant.push_back(RowOf(r, target, smooth_steps));
  std::stable_sort(constant.begin(), constant.end(),
                   [](const ScheduleRow& a, const ScheduleRow& b) {
                     return a.first_batch < b.first_batch;
                   });
  const size_t scheduled = out.rows.size();
  out.rows.insert(out.rows.end(), constant.begin(), constant.end());
  for (size_t i = 0; i < scheduled; ++i) {
    const ScheduleRow& s = out.rows[i];
    for (const ScheduleRow& c : constant) {
      if (c.steps <= 0 || s.steps <= 0) continue;
      std::string line;
      if (c.samples == s.samples) {
        line = fmt::format("{} took {} steps to {} samples, {} than {} ({} steps)", s.label,
                           s.steps, s.samples,
                           s.steps <= c.steps
                               ? Percent(1 - double(s.steps) / double(c.steps)) + " fewer"
                               : Percent(double(s.steps) / double(c.steps) - 1) + " more",
                           c.label, c.steps);
        if (s.final_loss && c.final_loss) {
          line += fmt::format("; final train loss {:.4g} against {:.4g}", *s.final_loss,
                              *c.final_loss);
        }
        if (s.final_test_loss && c.final_test_loss) {
          line += fmt::format(", test loss {:.4g} against {:.4g}", *s.final_test_loss,
                              *c.final_test_loss);
        }
      }
      if (s.target_step && c.target_step) {
        line += fmt::format("{}to the target: {} steps against {} ({})", line.empty() ? s.label + " " : "; ",
                            *s.target_step, *c.target_step,
                            *s.target_step <= *c.target_step
                                ? Percent(1 - double(*s.target_step) / double(*c.target_step)) +
                                      " fewer"
                                : Percent(double(*s.target_step) / double(*c.target_step) - 1) +
                                      " more");
      }
      if (!line.empty()) out.readings.push_back(line + ".");
    }
  }
  return out;
}

Table ScheduleTable(const ScheduleSection& s) {
  Table t{"batch_schedules",
          "Batch schedules against constant batches",
          {"run", "scheduled", "steps", "samples", "target_step", "target_samples", "final_loss",
           "final_test_loss"},
          {},
          {}};
  auto opt = [](const auto& v) { return v ? FormatNumber(static_cast<double>(*v), 6) : ""; };
  for (const ScheduleRow& r : s.rows) {
    t.rows.push_back({r.label, r.scheduled ? "yes" : "no", std::to_string(r.steps),
                      std::to_string(r.samples), opt(r.target_step), opt(r.target_samples),
                      opt(r.final_loss), opt(r.final_test_loss)});
  }
  t.notes.push_back(
      "final_loss: the mean of the last step losses (--smooth); a scheduled run's samples count "
      "each step at its own batch (docs/spec.md, Batch-size schedules)");
  return t;
}

}  // namespace batchlab::analysis
