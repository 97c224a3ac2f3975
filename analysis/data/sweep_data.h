// Loads one version of a sweep from the results database, read-only, into SweepData.
//
// The rows come from results::SweepReader (results/sweep_reader.h: runs with their start-line
// facts, swept parameters, and the current attempt's metric rows restricted to the names the
// analysis needs), read-only, so a running sweep is never blocked and nothing in the file can
// change.
//
//   LoadOptions opt;
//   opt.metrics = AnalysisMetrics("test_accuracy");  // or {} for every metric
//   BATCHLAB_ASSIGN_OR_RETURN(SweepData sweep, LoadSweep("batchlab.db", "quickstart", opt));
//   for (const RunData& r : sweep.runs) fmt::print("{} {}\n", r.id, r.state);
#ifndef BATCHLAB_ANALYSIS_DATA_SWEEP_DATA_H_
#define BATCHLAB_ANALYSIS_DATA_SWEEP_DATA_H_

#include <string>
#include <vector>

#include "analysis/data/run_data.h"
#include "base/status.h"

namespace batchlab::analysis {

struct LoadOptions {
  int version = 0;                   // 0 = the latest version of the sweep
  std::vector<std::string> metrics;  // names to load; empty = all
};

// The metric names the analyses read: timing, samples, loss, the gns_* terms and `target_metric`.
std::vector<std::string> AnalysisMetrics(const std::string& target_metric);

// NotFound naming the known sweeps when `name` (or the version) is not in the database;
// FailedPrecondition (from results::OpenReadOnly) for a file that is not a current batchlab
// database.
StatusOr<SweepData> LoadSweep(const std::string& db_path, const std::string& name,
                              const LoadOptions& options);

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_DATA_SWEEP_DATA_H_
