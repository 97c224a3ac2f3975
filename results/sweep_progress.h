// What a sweep is doing right now, read from the results database without blocking its writer:
// every run's state and timing, the last step it logged (with the loss there), and its last
// evaluation (every `test_*` value of that line). The raw facts behind `batchlab sweep status`,
// the running `sweep run` display and `batchlab ui`; orchestrator/execute/live_progress.h adds the
// budget, ETA and the text and JSON forms.
//
//   BATCHLAB_ASSIGN_OR_RETURN(auto db, OpenReadOnly("batchlab.db"));
//   BATCHLAB_ASSIGN_OR_RETURN(SweepSnapshot snap, ReadSweepSnapshot(*db, "quickstart"));
//   for (const RunSnapshot& r : snap.runs)
//     if (r.step) fmt::print("{} {} step {} loss {}\n", r.id, r.state, *r.step, *r.loss);
#ifndef BATCHLAB_RESULTS_SWEEP_PROGRESS_H_
#define BATCHLAB_RESULTS_SWEEP_PROGRESS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "results/database.h"

namespace batchlab::results {

struct EvalSnapshot {
  int64_t step = 0;
  std::map<std::string, double> values;  // test_accuracy, test_loss, ... of that eval line
};

struct RunSnapshot {
  std::string id;
  int ordinal = 0;
  std::string state;
  int attempt = 0;
  std::string host;
  std::string params;       // swept values, "batch_size=256 nodes=2 lr.rule=\"linear\""
  std::string config_json;  // the resolved config
  int64_t batch_size = 0;
  int world_size = 1;
  std::optional<double> started_at, ended_at;  // unix seconds
  std::optional<int64_t> step;                 // the last step logged by the current attempt
  std::optional<double> loss;                  // the last `loss` logged
  std::optional<EvalSnapshot> last_eval;
  std::optional<int64_t> checkpoint_step;  // the last checkpoint's step (docs/protocol.md)
  std::optional<double> checkpoint_time;   // and when it was written (unix seconds)
};

struct SweepSnapshot {
  std::string name;
  int version = 0;
  std::string spec_hash;
  std::vector<RunSnapshot> runs;  // expansion order
  int64_t lines_ingested = 0;     // metrics lines stored so far (grows as runs make progress)
};

// The latest version of sweep `name` (or `version`); NotFound names the sweeps the file holds.
StatusOr<SweepSnapshot> ReadSweepSnapshot(Database& db, const std::string& name,
                                          std::optional<int> version = std::nullopt);

}  // namespace batchlab::results

#endif  // BATCHLAB_RESULTS_SWEEP_PROGRESS_H_
