// Batch-size schedules measured against constant batches (docs/branch-study.md, "Schedules"): the
// runs of a sweep grouped by configuration (a schedule, or a constant batch; seeds pooled), each
// with its steps and samples, when it met the target, and its loss at the end (the mean of a run's
// last step losses, and its last evaluation) as mean and spread over seeds; each schedule set
// beside the constant batches that saw as many samples, with the steps it saved.
//
//   ScheduleSection s = CompareSchedules(sweep, /*smooth_steps=*/20);
//   Table t = ScheduleTable(s);          // one row per configuration, over its seeds
//   for (auto& line : s.readings) ...    // "B=16→64@8192 took 41% fewer steps than B=16 ..."
#ifndef BATCHLAB_ANALYSIS_SECTIONS_SCHEDULE_COMPARE_H_
#define BATCHLAB_ANALYSIS_SECTIONS_SCHEDULE_COMPARE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/data/run_data.h"
#include "analysis/data/table.h"

namespace batchlab::analysis {

// One configuration (a schedule, or a constant batch) over its seeds.
struct ScheduleRow {
  std::string label;  // "B=16" or "B=16→64@8192→128@24576" (batch→batch@samples)
  bool scheduled = false;
  int64_t first_batch = 0;
  int64_t largest_batch = 0;
  int seeds = 0;        // runs of this configuration that trained
  int64_t steps = 0;    // steps trained (the most over its runs)
  int64_t samples = 0;  // samples seen then
  // Mean first step meeting the target, and the mean samples seen by then, over the runs that
  // met it (and how many did: fewer than `seeds` makes both means over those runs only), with
  // their sample standard deviations (none below two such runs).
  std::optional<double> target_step, target_step_sd;
  std::optional<double> target_samples, target_samples_sd;
  int reached = 0;
  // Mean and sample standard deviation over seeds: the mean of the last `smooth_steps` step
  // losses of a run, and its last evaluation's test loss.
  std::optional<double> final_loss, final_loss_sd;
  std::optional<double> final_test_loss, final_test_loss_sd;
};

struct ScheduleSection {
  std::vector<ScheduleRow> rows;      // schedules first, then constant batches by batch
  std::vector<std::string> readings;  // one sentence per (schedule, constant batch) pair
  int smooth_steps = 0;
};

// The sweep's target (SweepData::target, e.g. "test_accuracy>=0.8"; empty: none) decides
// target_step; `smooth_steps`: the last step losses averaged into a run's final_loss.
ScheduleSection CompareSchedules(const SweepData& sweep, int smooth_steps);
Table ScheduleTable(const ScheduleSection& s);

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_SECTIONS_SCHEDULE_COMPARE_H_
