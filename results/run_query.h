// The read-side queries behind `batchlab results list` and `results export`: runs filtered by
// sweep, state and `--where` clauses (every value bound as a parameter), and a sweep's time
// series. Each returns a prepared Statement for WriteRows (results/table_writer.h).
//
//   BATCHLAB_ASSIGN_OR_RETURN(auto db, OpenReadOnly("batchlab.db"));
//   RunListOptions o;
//   o.sweep = "quickstart";
//   BATCHLAB_ASSIGN_OR_RETURN(o.where.emplace_back(), ParseWhere("batch_size>=1024"));
//   BATCHLAB_ASSIGN_OR_RETURN(Statement st, PrepareRunList(*db, o));
//   BATCHLAB_RETURN_IF_ERROR(WriteRows(st, OutputFormat::kTable, stdout).status());
#ifndef BATCHLAB_RESULTS_RUN_QUERY_H_
#define BATCHLAB_RESULTS_RUN_QUERY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "results/database.h"
#include "results/where_clause.h"

namespace batchlab::results {

// The columns `results list` shows by default: what a person asks of a scaling sweep first.
const std::vector<std::string>& DefaultListColumns();

struct RunListOptions {
  std::optional<std::string> sweep;  // the latest version of this sweep; every sweep if unset
  std::optional<int> sweep_version;  // a specific version instead of the latest
  std::optional<std::string> state;  // a run state name (checked)
  std::vector<WhereExpr> where;      // all must hold (each --where)
  std::vector<std::string> columns;  // run_summary columns; empty = DefaultListColumns(),
                                     // preceded by sweep, sweep_version when `sweep` is unset
};

// SELECT <columns> FROM run_summary WHERE ... ORDER BY sweep, ordinal.
StatusOr<Statement> PrepareRunList(Database& db, const RunListOptions& options);

// The id and version of sweep `name` (its latest version, or `version`). kNotFound lists the
// sweeps the database holds.
struct SweepVersion {
  int64_t id = 0;
  int version = 0;
};
StatusOr<SweepVersion> ResolveSweep(Database& db, const std::string& name,
                                    std::optional<int> version = std::nullopt);
StatusOr<int64_t> ResolveSweepId(Database& db, const std::string& name,
                                 std::optional<int> version = std::nullopt);

// Every sweep version with its run counts by outcome: sweep, version, runs, finished (completed,
// target_reached, budget_exhausted, diverged, pruned, stalled), running, pending, failed (failed,
// timed_out), cancelled (stopped by a signal; the same `sweep run` resumes them), spec_hash,
// created_at; by name, then version.
StatusOr<Statement> PrepareSweepList(Database& db);

// The latest version of every sweep with its run count, by name.
struct LatestSweep {
  std::string name;
  int version = 0;
  int64_t runs = 0;
};
StatusOr<std::vector<LatestSweep>> ListLatestSweeps(Database& db);

// A user's own read-only SQL (`batchlab results query`), prepared. InvalidArgument ("query: ...")
// for SQL that does not parse or that could change the database.
StatusOr<Statement> PrepareUserQuery(Database& db, const std::string& sql);

// Every run_summary column of the runs of a sweep, in expansion order.
StatusOr<Statement> PrepareRunsExport(Database& db, int64_t sweep_id);

// The current-attempt time series of every run of a sweep: run_id, attempt, seq, step, name,
// value, ordered by run (expansion order), seq and name.
StatusOr<Statement> PrepareMetricsExport(Database& db, int64_t sweep_id);

// The full run id for `id_or_prefix` (a unique prefix of at least 4 characters is enough).
StatusOr<std::string> ResolveRunId(Database& db, const std::string& id_or_prefix);

}  // namespace batchlab::results

#endif  // BATCHLAB_RESULTS_RUN_QUERY_H_
