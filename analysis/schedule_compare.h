// Batch-size schedules measured against constant batches (docs/branch-study.md, "Schedules"): for
// every run of a sweep, scheduled or not, its steps and samples, when it met the target, and its
// loss at the end (the mean of its last step losses, and its last evaluation); each scheduled run
// set beside the constant runs that saw as many samples, with the steps it saved.
//
//   ScheduleSection s = CompareSchedules(sweep, /*smooth_steps=*/20);
//   Table t = ScheduleTable(s);          // one row per run
//   for (auto& line : s.readings) ...    // "B=16→64@8192 took 41% fewer steps than B=16 ..."
#ifndef BATCHLAB_ANALYSIS_SCHEDULE_COMPARE_H_
#define BATCHLAB_ANALYSIS_SCHEDULE_COMPARE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/run_data.h"
#include "analysis/table.h"

namespace batchlab::analysis {

struct ScheduleRow {
  std::string label;  // "B=16" or "B=16→64@8192→128@24576" (batch→batch@samples)
  bool scheduled = false;
  int64_t first_batch = 0;
  int64_t largest_batch = 0;
  int64_t steps = 0;    // steps trained (the last step line)
  int64_t samples = 0;  // samples seen then
  std::optional<int64_t> target_step, target_samples;  // first evaluation meeting the target
  std::optional<double> final_loss;       // mean of the last `smooth_steps` step losses
  std::optional<double> final_test_loss;  // the last evaluation's
};

struct ScheduleSection {
  std::vector<ScheduleRow> rows;        // scheduled runs first, then constant ones by batch
  std::vector<std::string> readings;    // one sentence per (scheduled run, constant run) pair
};

// `target` ("test_accuracy>=0.8" as SweepData::target; empty: none) decides target_step.
ScheduleSection CompareSchedules(const SweepData& sweep, int smooth_steps);
Table ScheduleTable(const ScheduleSection& s);

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_SCHEDULE_COMPARE_H_
