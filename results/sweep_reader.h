// The rows of one sweep version that the analysis reads, from one read snapshot of the results
// database: its runs (run_summary, with the start-line facts and the resolved config), their
// swept parameters, and the current attempt's metric rows of the wanted names.
// analysis/data/sweep_data.cc turns them into RunData; nothing outside results/ writes SQL.
//
//   BATCHLAB_ASSIGN_OR_RETURN(auto reader, SweepReader::Open("batchlab.db", "quickstart", 0));
//   BATCHLAB_ASSIGN_OR_RETURN(std::vector<SweepRunRow> runs, reader->Runs());
//   BATCHLAB_ASSIGN_OR_RETURN(auto names, reader->MetricNames({"loss"}));
//   BATCHLAB_RETURN_IF_ERROR(reader->ScanMetrics(names, 1, [&](int, const MetricRow* r, size_t n) {
//     for (size_t i = 0; i < n; ++i) fmt::print("{} {} {}\n", r[i].run_key, r[i].step, r[i].value);
//   }));
#ifndef BATCHLAB_RESULTS_SWEEP_READER_H_
#define BATCHLAB_RESULTS_SWEEP_READER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "results/database.h"

namespace batchlab::results {

// One run of the sweep; a column the run does not have is nullopt.
struct SweepRunRow {
  int64_t run_key = 0;
  std::string run_id, state, optimizer, lr_rule, config_json;
  std::optional<int64_t> batch_size, nodes, world_size, local_batch_size, seed;
  // The facts of the runner's `start` line (docs/schema.md, `runs`): unknown = nullopt.
  std::optional<int64_t> parameters, tokens_per_step;
  std::optional<double> flops_per_step;
  // Where and when the run's current attempt ran (the orchestrator's records): what the
  // analysis derives each run's load from (co-running ranks on its host).
  std::string host;
  std::optional<double> started_at, ended_at;
  int attempt = 0;  // the current attempt (whose metrics the analysis reads)
};

// One attempt of a run of the sweep (docs/schema.md, `attempts`): the rank count it ran with
// and the checkpoint it resumed (v7; nullopt when not recorded).
struct SweepAttemptRow {
  int64_t run_key = 0;
  int attempt = 0;
  std::optional<int64_t> world_size, resumed_from, resumed_step;
};

// One swept value of a run, as JSON text: integers and reals as numbers, text quoted.
struct SweepParamRow {
  int64_t run_key = 0;
  std::string name;
  std::string json_value;
};

// One metric row of a run's current attempt (a NULL step reads as 0).
struct MetricRow {
  int64_t run_key = 0;
  int64_t name_id = 0;
  int64_t step = 0;
  double value = 0;
};

// Receives the rows of part `part` in batches, in (run, seq) order within a part.
using MetricRowsVisitor = std::function<void(int part, const MetricRow* rows, size_t count)>;

class SweepReader {
 public:
  // Opens `db_path` read-only (OpenReadOnly's checks), finds sweep `name` (`version`, or the
  // latest when 0; kNotFound naming the sweeps the file holds) and starts a read snapshot that
  // every call below sees, however a running sweep writes meanwhile.
  static StatusOr<std::unique_ptr<SweepReader>> Open(const std::string& db_path,
                                                     const std::string& name, int version);
  ~SweepReader();
  SweepReader(const SweepReader&) = delete;
  SweepReader& operator=(const SweepReader&) = delete;

  int64_t sweep_id() const { return sweep_id_; }
  int version() const { return version_; }

  StatusOr<std::vector<SweepRunRow>> Runs();  // in expansion order
  StatusOr<std::string> SpecJson();           // the sweep version's spec (canonical JSON)
  StatusOr<std::vector<SweepParamRow>> Params();
  StatusOr<std::vector<SweepAttemptRow>> Attempts();  // every attempt of the sweep's runs
  // Metric name ids -> names, only those in `wanted` (every name when empty).
  StatusOr<std::unordered_map<int64_t, std::string>> MetricNames(
      const std::vector<std::string>& wanted);

  // Every current-attempt metric row of the sweep's runs whose name id is in `names`, passed to
  // `visit` in batches. With `parts` > 1 the rows are read by `parts` connections in parallel,
  // part p holding the runs with run_key % parts == p: `visit` is then called from several
  // threads at once, but for any one run always with the same part, from one thread. (Parts
  // other than 0 read their own snapshot, taken a moment later: a run still being ingested may
  // show a few more rows; finished runs are unaffected.)
  Status ScanMetrics(const std::unordered_map<int64_t, std::string>& names, int parts,
                     const MetricRowsVisitor& visit);

 private:
  SweepReader(std::unique_ptr<Database> db, std::string path)
      : db_(std::move(db)), path_(std::move(path)) {}

  std::unique_ptr<Database> db_;
  std::string path_;
  int64_t sweep_id_ = 0;
  int version_ = 0;
};

}  // namespace batchlab::results

#endif  // BATCHLAB_RESULTS_SWEEP_READER_H_
