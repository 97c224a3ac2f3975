// Ingest of a runner's metrics file (JSON Lines, docs/protocol.md) into the results database.
//
// Exactly once per (run, attempt, seq): a per-(run, attempt) cursor in `ingest_cursors` holds the
// byte offset just past the last consumed line, the line count and the last seq, and is updated
// in the same transaction as the rows it covers; re-reading a file therefore starts where the
// previous pass stopped, and the metrics primary key (run_key, attempt, seq, name_id) with
// INSERT OR IGNORE keeps even a full re-read from duplicating anything.
//
// A half-written last line (no trailing newline) is not consumed by a live pass: the next pass
// reads it again; the final pass (the writer is gone) consumes it and records `truncated_line`.
//
// Metrics files are untrusted input (docs/security.md). Every anomaly becomes an event of the
// attempt, and none hides a later line (in particular not the `end` line):
//   corrupt_metrics_line  a complete line that is not a valid record: skipped
//   seq_not_increasing    seq <= the previous line's seq: the line is still stored (rows whose
//                         (seq, metric) an earlier line already holds are kept as first written)
//   non_finite_value      NaN/Infinity (bare tokens or overflowing numbers): stored, NaN as NULL
//   line_too_long         a line over kMaxLineBytes: skipped without being held in memory
//   truncated_line        the final pass found a last line without its newline
//   line_after_end        a line after the `end` line: stored; a later `end` line wins
// After kMaxAnomalyEvents events per attempt, one `anomalies_not_listed` event says so and the
// rest are only counted (ingest_cursors.anomalies). Lines are parsed without a JSON tree
// (metrics_line.h) and stored in batches of kBatchLines per transaction, one cached multi-row
// INSERT per line; metric names go through the `metric_names` dictionary.
//
//   MetricsIngester ingester(db);
//   BATCHLAB_ASSIGN_OR_RETURN(IngestStats st, ingester.Ingest(run_key, attempt, path));
#ifndef BATCHLAB_RESULTS_METRICS_INGEST_H_
#define BATCHLAB_RESULTS_METRICS_INGEST_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/status.h"
#include "results/database.h"
#include "results/metrics_line.h"
#include "results/store.h"

namespace batchlab::results {

class MetricsIngester {
 public:
  static constexpr int kBatchLines = 4096;
  static constexpr size_t kMaxRowsPerInsert = 32;
  static constexpr size_t kMaxLineBytes = 1 << 20;
  static constexpr int64_t kMaxAnomalyEvents = 100;

  explicit MetricsIngester(Database& db) : db_(db) {}

  // Reads `path` from the (run_key, attempt) cursor on. A file that does not exist yet holds
  // nothing to ingest (OK, zero counts). A file shorter than the cursor was replaced: it is read
  // again from the start (an event records it) and only unseen rows are added.
  StatusOr<IngestStats> Ingest(int64_t run_key, int attempt, const std::string& path,
                               IngestPass pass = IngestPass::kLive);

 private:
  struct Cursor {
    int64_t byte_offset = 0;
    int64_t lines = 0;
    int64_t last_seq = -1;  // seq of the last record line
    bool saw_end = false;
    int64_t anomalies = 0;
  };
  struct Where {  // the attempt and file a pass reads
    int64_t run_key;
    int attempt;
    const std::string& path;
  };

  Status PrepareStatements();
  StatusOr<Cursor> LoadCursor(int64_t run_key, int attempt);
  Status SaveCursor(int64_t run_key, int attempt, const Cursor& c);
  // Stores one complete line (without its newline); updates `c` and `stats`.
  Status StoreLine(const Where& w, std::string_view line, int64_t line_offset, Cursor& c,
                   IngestStats& stats);
  Status StoreStartOrEnd(const Where& w, std::string_view line, const std::string& kind);
  // A resumed attempt's first line (docs/protocol.md, "Checkpoints"): the earlier attempt's
  // lines before this line's seq become this attempt's too, so every reader sees one continuous
  // run; an event names the checkpoint and the steps trained again, one more each rejected file.
  Status StoreResume(const Where& w, std::string_view line, int64_t seq);
  Status StoreValues(const Where& w, const MetricsLine& m, IngestStats& stats);
  // The cached statement inserting `n` metric rows at once.
  StatusOr<Statement*> InsertRows(size_t n);
  // Records one anomaly of the attempt as an event (or only counts it past the limit).
  Status RecordAnomaly(const Where& w, const char* kind, const std::string& message, Cursor& c,
                       IngestStats& stats);
  StatusOr<std::string> EndOutcome(const Where& w);
  StatusOr<int64_t> NameId(const std::string& name);

  Database& db_;
  bool prepared_ = false;
  MetricsLineParser parser_;
  std::map<size_t, Statement> insert_rows_;
  Statement insert_name_, select_name_, load_cursor_, save_cursor_, insert_event_, update_end_,
      update_start_, select_outcome_, update_attempt_world_, update_attempt_resume_;
  std::unordered_map<std::string, int64_t> name_ids_;
};

}  // namespace batchlab::results

#endif  // BATCHLAB_RESULTS_METRICS_INGEST_H_
