// Synchronization modes side by side (docs/methods.md §9): for every configuration of a sweep
// that varies comm.sync (and its sync_every / backup_workers / straggler), the steps, samples,
// seconds and compute to the target (mean over seeds, when every seed reached it), the mean
// per-step wait, staleness and effective batch, and the time to target relative to allreduce
// under the same straggler and other swept values.
//
//   BATCHLAB_ASSIGN_OR_RETURN(TargetSection target, AnalyzeTarget(sweep, options));
//   SyncSection sync = AnalyzeSync(sweep, target);
//   fmt::print("{}", SyncTable(sync).ToText());
#ifndef BATCHLAB_ANALYSIS_SECTIONS_SYNC_MODES_H_
#define BATCHLAB_ANALYSIS_SECTIONS_SYNC_MODES_H_

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/data/run_data.h"
#include "analysis/estimators/steps_to_target.h"
#include "analysis/data/table.h"

namespace batchlab::analysis {

// A run's synchronization settings, from its swept values ("comm.sync", "comm" as a whole, ...);
// a value the sweep does not vary is its default (allreduce, no straggler).
struct SyncSetting {
  std::string mode = "allreduce";
  std::string detail;              // "H=4", "b=1", "" (what the mode's own field says)
  std::string straggler = "none";  // "rank 1, 30 ms", "random, 30 ms, p=0.5"
};
SyncSetting SyncSettingOf(const RunData& run);

struct SyncRow {
  SyncSetting setting;
  std::string others;  // every other swept value but the seed ("" when only sync varies)
  int runs = 0;
  int reached = 0;
  // Means over seeds; set only when every seed reached the target.
  std::optional<double> steps, samples, seconds, compute;
  // Means over every logged step of the configuration's runs (nullopt: not logged).
  std::optional<double> wait_seconds, staleness, effective_batch;
  // seconds of allreduce (same straggler and others) / seconds of this row.
  std::optional<double> speedup;
};

struct SyncSection {
  Target target;
  std::vector<SyncRow> rows;  // sorted: others, straggler, then allreduce first
  bool varies = false;        // the sweep varies a synchronization setting
};

// `target.hits` must be FindTargetHits(sweep.runs, ...) in run order (AnalyzeTarget's).
SyncSection AnalyzeSync(const SweepData& sweep, const std::vector<TargetHit>& hits,
                        const Target& target);

Table SyncTable(const SyncSection& sync);
// One line per straggler setting (and other swept values) for the report's summary: the mode
// fastest to the target and its speedup over allreduce ("" values when nothing reached it).
std::vector<std::string> SyncSummary(const SyncSection& sync);
nlohmann::json SyncJson(const SyncSection& sync);

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_SECTIONS_SYNC_MODES_H_
