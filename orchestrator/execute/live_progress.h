// A sweep's live progress, for people: every run's step (of its budget), loss, last evaluation,
// elapsed time and ETA, the sweep's state counts and ETA, and a fingerprint that changes whenever
// anything lands. Built from a results::SweepSnapshot (read-only, never blocks the writer); shown
// by `batchlab sweep status [--watch]`, under the live line of `batchlab sweep run`, and by
// `batchlab ui` (as JSON).
//
// A run's total steps come from its resolved config's budget (steps; samples / B; epochs ×
// training-set size / B); its ETA is elapsed × (total − step) / step, or what is left of a
// seconds budget. The sweep's ETA is the longest running run's ETA plus the waiting runs'
// mean duration (of finished runs, else of running runs' projected totals) spread over the
// runs that run side by side now.
//
//   BATCHLAB_ASSIGN_OR_RETURN(results::SweepSnapshot snap, results::ReadSweepSnapshot(*db, name));
//   LiveProgress live = ComputeLiveProgress(std::move(snap), UnixSeconds());
//   fmt::print("{}", FormatLiveProgress(live, /*all_runs=*/false));
#ifndef BATCHLAB_ORCHESTRATOR_EXECUTE_LIVE_PROGRESS_H_
#define BATCHLAB_ORCHESTRATOR_EXECUTE_LIVE_PROGRESS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "results/sweep_progress.h"

namespace batchlab::orchestrator {

struct RunLive {
  results::RunSnapshot run;
  std::optional<int64_t> total_steps;  // from the budget; unset for a seconds-only budget
  double elapsed_seconds = 0;          // since it started (to its end, if it ended); >= 0
  std::optional<double> eta_seconds;   // running runs with a step logged
  std::optional<double> checkpoint_age_seconds;  // since its last checkpoint was written
};

struct LiveProgress {
  std::string sweep;
  int version = 0;
  std::string spec_hash;
  std::vector<RunLive> runs;          // expansion order
  std::map<std::string, int> counts;  // state -> runs
  int total = 0;
  std::optional<double> eta_seconds;  // the whole sweep; unset when nothing can tell yet
  std::string fingerprint;            // changes when a state changes or metrics arrive
  double now = 0;                     // the unix time it was computed at
};

// How long a finished run stays in the default view (FormatLiveProgress without all_runs) with
// its final step, loss and evaluation: a run shorter than a refresh (or than the ingest period)
// would otherwise never show its numbers there.
inline constexpr double kRecentlyEndedSeconds = 10;

LiveProgress ComputeLiveProgress(results::SweepSnapshot snapshot, double now_seconds);

// The steps a budget allows, when the config fixes them (steps, samples, or epochs of a dataset
// of known size), counted as the runner counts them (base/run_values.h's LengthOf: the sync
// mode's samples per step, the batch schedule); unset for a seconds-only budget.
std::optional<int64_t> BudgetSteps(const nlohmann::json& config);

// "0:42", "12:05", "2h03"; never negative.
std::string FormatDuration(double seconds);

// The counts line and a table of the running runs and of the runs that ended in the last
// kRecentlyEndedSeconds (every run with `all_runs`).
std::string FormatLiveProgress(const LiveProgress& live, bool all_runs);

// The form `batchlab ui` serves at /api/sweeps/NAME/progress (documented in docs/report.md).
nlohmann::json LiveProgressJson(const LiveProgress& live);

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_EXECUTE_LIVE_PROGRESS_H_
