// Batch-size schedules against constant batches (see schedule_compare.h).
#include "analysis/sections/schedule_compare.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "analysis/estimators/steps_to_target.h"
#include "base/run_protocol.h"

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

// One run's figures.
struct RunFigures {
  int64_t steps = 0, samples = 0;
  std::optional<int64_t> target_step, target_samples;
  std::optional<double> final_loss, final_test_loss;
};

// Samples seen by `step`: the run's `samples` metric at that step (a schedule's steps differ in
// batch), else step x batch.
int64_t SamplesAt(const RunData& run, int64_t step) {
  if (const Series* samples = run.Metric("samples"); samples != nullptr) {
    for (size_t i = 0; i < samples->size(); ++i) {
      if (samples->steps[i] == step) return static_cast<int64_t>(samples->values[i]);
    }
  }
  return step * run.batch_size;
}

RunFigures FiguresOf(const RunData& run, const std::optional<Target>& target, int smooth_steps) {
  RunFigures f;
  if (const Series* loss = run.Metric("loss"); loss != nullptr && !loss->empty()) {
    f.steps = loss->steps.back();
    const size_t n = std::min(loss->size(), static_cast<size_t>(std::max(smooth_steps, 1)));
    double sum = 0;
    for (size_t i = loss->size() - n; i < loss->size(); ++i) sum += loss->values[i];
    f.final_loss = sum / static_cast<double>(n);
  }
  f.samples = f.steps * run.batch_size;
  if (const Series* samples = run.Metric("samples"); samples != nullptr && !samples->empty()) {
    f.samples = static_cast<int64_t>(samples->values.back());
  }
  if (const Series* test = run.Metric(protocol::kMetricTestLoss);
      test != nullptr && !test->empty()) {
    f.final_test_loss = test->values.back();
  }
  if (target) {
    if (const Series* m = run.Metric(target->metric); m != nullptr) {
      for (size_t i = 0; i < m->size(); ++i) {
        if (target->Met(m->values[i])) {
          f.target_step = m->steps[i];
          f.target_samples = SamplesAt(run, m->steps[i]);
          break;
        }
      }
    }
  }
  return f;
}

// Mean and sample standard deviation (nullopt for no values; sd nullopt for one).
void MeanSd(const std::vector<double>& v, std::optional<double>* mean, std::optional<double>* sd) {
  if (v.empty()) return;
  double m = 0;
  for (double x : v) m += x;
  m /= static_cast<double>(v.size());
  *mean = m;
  if (v.size() < 2) return;
  double ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  *sd = std::sqrt(ss / static_cast<double>(v.size() - 1));
}

ScheduleRow RowOf(const std::vector<const RunData*>& runs, const std::optional<Target>& target,
                  int smooth_steps) {
  ScheduleRow row;
  const RunData& first = *runs.front();
  row.label = ScheduleLabel(first);
  row.scheduled = first.batch_schedule.is_object();
  row.first_batch = first.batch_size;
  row.largest_batch = first.batch_size;
  if (row.scheduled) {
    for (const auto& b : first.batch_schedule.value("batch_sizes", nlohmann::json::array())) {
      if (b.is_number_integer()) row.largest_batch = std::max(row.largest_batch, b.get<int64_t>());
    }
  }
  std::vector<double> losses, tests, targets, target_samples;
  for (const RunData* r : runs) {
    const RunFigures f = FiguresOf(*r, target, smooth_steps);
    if (f.steps == 0) continue;
    ++row.seeds;
    if (f.steps > row.steps) {
      row.steps = f.steps;
      row.samples = f.samples;
    }
    if (f.final_loss) losses.push_back(*f.final_loss);
    if (f.final_test_loss) tests.push_back(*f.final_test_loss);
    if (f.target_step) targets.push_back(static_cast<double>(*f.target_step));
    if (f.target_samples) target_samples.push_back(static_cast<double>(*f.target_samples));
  }
  MeanSd(losses, &row.final_loss, &row.final_loss_sd);
  MeanSd(tests, &row.final_test_loss, &row.final_test_loss_sd);
  MeanSd(targets, &row.target_step, &row.target_step_sd);
  MeanSd(target_samples, &row.target_samples, &row.target_samples_sd);
  row.reached = static_cast<int>(targets.size());
  return row;
}

std::string FewerOrMore(double ours, double theirs) {
  return ours <= theirs ? WholePercent(1 - ours / theirs) + " fewer"
                        : WholePercent(ours / theirs - 1) + " more";
}

// A mean loss over seeds, "± sd" (2 digits) where there is one (`*sd_shown` then set).
std::string LossText(const std::optional<double>& mean, const std::optional<double>& sd,
                     bool* sd_shown) {
  if (!sd) return FormatNumber(*mean);
  *sd_shown = true;
  return FormatNumber(*mean) + " ± " + FormatNumber(*sd, 2);
}

// Mean steps or samples to the target over seeds (`significant` digits), "± sd" in a sentence's
// plain digits ("7040 ± 2300", never "2.3e+03") where there is one (`*sd_shown` then set).
std::string CountText(const std::optional<double>& mean, const std::optional<double>& sd,
                      bool* sd_shown, int significant) {
  if (!sd) return FormatNumber(*mean, significant);
  *sd_shown = true;
  return FormatNumber(*mean, significant) + " ± " + ProseNumber(*sd);
}

}  // namespace

ScheduleSection CompareSchedules(const SweepData& sweep, int smooth_steps) {
  std::optional<Target> target;
  if (!sweep.target.empty()) {
    if (StatusOr<Target> t = ParseTarget(sweep.target); t.ok()) target = *t;
  }
  ScheduleSection out;
  out.smooth_steps = smooth_steps;
  // Configurations: everything swept but the seed (ConfigKey), in the order first seen.
  auto group = [&](const std::vector<RunData>& runs) {
    std::vector<std::string> order;
    std::map<std::string, std::vector<const RunData*>> by_key;
    for (const RunData& r : runs) {
      const std::string key = ConfigKey(r, {"seed"}) + "|" + std::to_string(r.batch_size);
      if (by_key.count(key) == 0) order.push_back(key);
      by_key[key].push_back(&r);
    }
    std::vector<ScheduleRow> rows;
    for (const std::string& key : order) rows.push_back(RowOf(by_key[key], target, smooth_steps));
    return rows;
  };
  out.rows = group(sweep.scheduled);
  const size_t scheduled = out.rows.size();
  std::vector<ScheduleRow> constant = group(sweep.runs);
  std::stable_sort(constant.begin(), constant.end(),
                   [](const ScheduleRow& a, const ScheduleRow& b) {
                     return a.first_batch < b.first_batch;
                   });
  out.rows.insert(out.rows.end(), constant.begin(), constant.end());
  for (size_t i = 0; i < scheduled; ++i) {
    const ScheduleRow& s = out.rows[i];
    for (const ScheduleRow& c : constant) {
      if (c.steps <= 0 || s.steps <= 0) continue;
      std::string line;
      bool sd_shown = false;
      if (c.samples == s.samples) {
        line = fmt::format("{} took {} steps to {} samples, {} than {} ({} steps)", s.label,
                           s.steps, s.samples,
                           FewerOrMore(static_cast<double>(s.steps), static_cast<double>(c.steps)),
                           c.label, c.steps);
        if (s.final_loss && c.final_loss) {
          line += fmt::format("; final train loss {} against {}",
                              LossText(s.final_loss, s.final_loss_sd, &sd_shown),
                              LossText(c.final_loss, c.final_loss_sd, &sd_shown));
        }
        if (s.final_test_loss && c.final_test_loss) {
          line += fmt::format(", test loss {} against {}",
                              LossText(s.final_test_loss, s.final_test_loss_sd, &sd_shown),
                              LossText(c.final_test_loss, c.final_test_loss_sd, &sd_shown));
        }
      }
      if (s.target_step && c.target_step) {
        line +=
            fmt::format("{}to the target: {} steps against {} ({})",
                        line.empty() ? s.label + " " : "; ",
                        CountText(s.target_step, s.target_step_sd, &sd_shown, 4),
                        CountText(c.target_step, c.target_step_sd, &sd_shown, 4),
                        FewerOrMore(*s.target_step, *c.target_step));
        if (s.target_samples && c.target_samples) {
          line += fmt::format(", {} samples against {} ({})",
                              CountText(s.target_samples, s.target_samples_sd, &sd_shown, 5),
                              CountText(c.target_samples, c.target_samples_sd, &sd_shown, 5),
                              FewerOrMore(*s.target_samples, *c.target_samples));
        }
        if (s.reached < s.seeds || c.reached < c.seeds) {
          line += fmt::format(" — means over the seeds that reached it only: {} of {} and {} of {}",
                              s.reached, s.seeds, c.reached, c.seeds);
        }
      }
      if (!line.empty()) {
        // Say what the figures are: "± sd" only where one is shown.
        const char* over_seeds = sd_shown                             ? " (mean ± sd over seeds)."
                                 : std::max(s.seeds, c.seeds) > 1 ? " (mean over seeds)."
                                                                  : ".";
        out.readings.push_back(line + over_seeds);
      }
    }
  }
  return out;
}

Table ScheduleTable(const ScheduleSection& s) {
  Table t{"batch_schedules",
          "Batch schedules against constant batches",
          {"run", "scheduled", "seeds", "steps", "samples", "target_step", "target_samples",
           "reached",
           "final_loss", "final_loss_sd", "final_test_loss", "final_test_loss_sd"},
          {},
          {}};
  auto opt = [](const std::optional<double>& v) { return v ? FormatNumber(*v, 5) : ""; };
  for (const ScheduleRow& r : s.rows) {
    t.rows.push_back({r.label, r.scheduled ? "yes" : "no", std::to_string(r.seeds),
                      std::to_string(r.steps), std::to_string(r.samples), opt(r.target_step),
                      opt(r.target_samples), std::to_string(r.reached), opt(r.final_loss), opt(r.final_loss_sd),
                      opt(r.final_test_loss), opt(r.final_test_loss_sd)});
  }
  t.notes.push_back(fmt::format(
      "One row per configuration, seeds pooled. steps, samples: the longest seed's. target_step, "
      "target_samples: the first evaluation meeting the target and the samples seen by then, "
      "means over the `reached` seeds that met it. final_loss: the mean of a run's last {} step "
      "losses; final_test_loss: its last evaluation; then mean and sd over seeds. A scheduled "
      "run's samples count each step at its own batch (docs/spec.md, Batch-size schedules).",
      s.smooth_steps));
  return t;
}

}  // namespace batchlab::analysis
