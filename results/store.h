// The batchlab results database: one SQLite file, written only by the orchestrator.
//
// Store is the writer's handle (WAL mode, busy timeout, schema created or migrated on open).
// Readers (CLI `results`, analysis) open the same file with OpenReadOnly and never block it.
//
//   BATCHLAB_ASSIGN_OR_RETURN(auto store, results::Store::Open("batchlab.db"));
//   BATCHLAB_ASSIGN_OR_RETURN(auto sweep, store->CreateSweep("quickstart", spec_json, hash));
//   BATCHLAB_RETURN_IF_ERROR(store->AddRun(run));
//   BATCHLAB_RETURN_IF_ERROR(store->Transition(run.id, RunState::kRunning, {}));
//   BATCHLAB_ASSIGN_OR_RETURN(auto n, store->IngestMetrics(run.id, attempt, metrics_path));
//
// Tables and views are documented in docs/schema.md.
#ifndef BATCHLAB_RESULTS_STORE_H_
#define BATCHLAB_RESULTS_STORE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/run_protocol.h"
#include "base/status.h"

namespace batchlab::results {

enum class RunState {
  kPending,
  kRunning,
  kCompleted,
  kTargetReached,
  kDiverged,
  kBudgetExhausted,
  kFailed,
  kTimedOut,
  kCancelled,
  kPruned,   // stopped early: it could no longer change the study's answer (pruning.h)
  kStalled,  // stopped by the opt-in stall rule: no better than chance for N evaluations
};
const char* RunStateName(RunState s);  // "pending", "running", "completed", "target_reached", ...
StatusOr<RunState> ParseRunState(const std::string& name);
// The state a run ends in when its program ends with `outcome`, for a final outcome; nullopt for
// kPreempted (the run goes on in a new attempt). The map from the protocol to the database: an
// outcome never round-trips through its name.
std::optional<RunState> FinalStateOf(protocol::Outcome outcome);
// The same for an exit code (nullopt: not a final outcome's code) and for the outcome an end line
// names (nullopt: empty, unknown or not final).
std::optional<RunState> FinalStateOfExitCode(int code);
std::optional<RunState> FinalStateOfOutcomeName(std::string_view name);
bool IsTerminal(RunState s);  // every state but pending and running
bool IsFinished(RunState s);  // completed, target_reached, diverged, budget_exhausted, pruned,
                              // stalled: never re-run

struct SweepRecord {
  int64_t id = 0;
  std::string name;
  int version = 1;
  std::string spec_json;
  std::string spec_hash;
  double created_at = 0;  // unix seconds
};

// One expanded point of a sweep. `params` are the swept values (name -> JSON scalar as text:
// "batch_size" -> "256", "lr.rule" -> "\"linear\""), stored typed so they can be filtered.
struct RunRecord {
  std::string id;  // hash of the resolved config (see docs/protocol.md)
  int64_t sweep_id = 0;
  int ordinal = 0;  // position in the expansion
  std::string config_json;
  std::map<std::string, std::string> params;
  RunState state = RunState::kPending;
  int attempt = 0;
  std::optional<int> exit_code;
  std::string host;
  std::optional<double> started_at, ended_at;
};

// What the end of a run reported (from the runner's `end` line, or from the orchestrator when
// the runner never wrote one).
struct RunOutcome {
  std::optional<int> exit_code;
  std::string message;  // recorded as an event (e.g. stderr tail of a failed run)
};

struct IngestStats {
  int64_t lines_read = 0;     // complete lines seen in this pass
  int64_t lines_stored = 0;   // lines not seen before
  int64_t values_stored = 0;  // metric values inserted
  int64_t corrupt_lines = 0;  // recorded as events, skipped
  int64_t anomalies = 0;      // lines recorded as anomaly events in this pass (corrupt included)
  bool saw_end = false;       // the file holds the runner's `end` line
  std::string end_outcome;    // its `outcome` (any pass), when it names a finished state
};

// How far the current attempt of a run has come toward a target `metric OP value`
// (OP one of >= > <= <), from the metrics stored so far: what exact pruning and the LR search read.
struct TargetProgress {
  std::optional<int64_t> hit_step;   // the first logged step whose metric meets the target
  std::optional<int64_t> last_step;  // the last step at which the metric was logged
};

// A live pass leaves a last line without its newline for the next pass (it may still be being
// written); the final pass, once the attempt's processes are gone, consumes it as truncated.
enum class IngestPass { kLive, kFinal };

class Store {
 public:
  // Opens (creating if absent) the database for writing; creates or migrates the schema.
  // Refuses a database from a newer batchlab or a file that is not a batchlab database, and a
  // database another process is writing (the single-writer lock, writer_lock.h), before
  // touching the file.
  static StatusOr<std::unique_ptr<Store>> Open(const std::string& path);
  virtual ~Store() = default;

  // 16 hex digits, random, made when the database was created (or migrated to v5); attempt
  // folders carry it so that databases sharing a runs folder never touch each other's.
  virtual const std::string& database_id() const = 0;

  // Sweeps: the latest version under a name, a specific version, or a new version.
  virtual StatusOr<std::optional<SweepRecord>> LatestSweep(const std::string& name) = 0;
  virtual StatusOr<SweepRecord> CreateSweep(const std::string& name, const std::string& spec_json,
                                            const std::string& spec_hash) = 0;
  // Records an extended spec (more seeds or axis values, orchestrator/spec/spec_extension.h) on an
  // existing sweep version, whose new runs then join it.
  virtual Status UpdateSweepSpec(int64_t sweep_id, const std::string& spec_json,
                                 const std::string& spec_hash) = 0;

  // Runs of a sweep. AddRun is idempotent on run id (an existing run is left as it is).
  virtual Status AddRun(const RunRecord& run) = 0;
  virtual StatusOr<std::vector<RunRecord>> RunsOfSweep(int64_t sweep_id) = 0;
  // The run with this id, of whichever sweep (version) added it; nullopt when there is none.
  virtual StatusOr<std::optional<RunRecord>> FindRun(const std::string& run_id) = 0;

  // Moves a run to `to` in one transaction and records the transition as an event.
  // kRunning increments the attempt and records host and start time; a terminal state records
  // the end time and the outcome.
  virtual Status Transition(const std::string& run_id, RunState to, const RunOutcome& outcome) = 0;

  // Transition to kRunning that also records the new attempt's folder (in the same transaction).
  virtual Status StartAttempt(const std::string& run_id, const std::string& attempt_dir) = 0;

  // The folder recorded for (run, attempt) when it started; nullopt for attempts started before
  // schema v5 (or never).
  virtual StatusOr<std::optional<std::string>> AttemptDir(const std::string& run_id,
                                                          int attempt) = 0;

  // Reads the metrics file of (run, attempt) and stores each complete line exactly once
  // (idempotent on run, attempt, seq); the `end` line fills the run's summary columns. Every
  // anomaly (corrupt line, seq not increasing, non-finite value, oversized or truncated line,
  // lines after the end line) becomes an event; none hides a later line (metrics_ingest.h).
  virtual StatusOr<IngestStats> IngestMetrics(const std::string& run_id, int attempt,
                                              const std::string& path,
                                              IngestPass pass = IngestPass::kLive) = 0;

  // The run's progress toward a target (its current attempt); InvalidArgument for another OP.
  virtual StatusOr<TargetProgress> TargetProgressOf(const std::string& run_id,
                                                    const std::string& metric,
                                                    const std::string& op, double value) = 0;

  // The last `n` values of `metric` logged by the run's current attempt, newest first.
  virtual StatusOr<std::vector<double>> RecentValuesOf(const std::string& run_id,
                                                       const std::string& metric, int n) = 0;

  // Appends a free-form event (retry, error, cancel) to a run's history.
  virtual Status RecordEvent(const std::string& run_id, const std::string& kind,
                             const std::string& message) = 0;
};

}  // namespace batchlab::results

#endif  // BATCHLAB_RESULTS_STORE_H_
