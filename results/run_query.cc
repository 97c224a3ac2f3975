// Run listing, sweep resolution and export queries; see run_query.h.
#include "results/run_query.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include "base/closest_name.h"
#include "results/store.h"

namespace batchlab::results {

const std::vector<std::string>& DefaultListColumns() {
  static const std::vector<std::string> kColumns = {
      "run_id", "batch_size", "nodes",       "world_size",          "lr_rule",
      "state",  "steps",      "target_step", "final_test_accuracy", "seconds"};
  return kColumns;
}

StatusOr<int64_t> ResolveSweepId(Database& db, const std::string& name,
                                 std::optional<int> version) {
  BATCHLAB_ASSIGN_OR_RETURN(SweepVersion found, ResolveSweep(db, name, version));
  return found.id;
}

StatusOr<SweepVersion> ResolveSweep(Database& db, const std::string& name,
                                    std::optional<int> version) {
  BATCHLAB_ASSIGN_OR_RETURN(
      Statement st, db.Prepare("SELECT id, version FROM sweeps WHERE name = ?1 AND (?2 IS NULL "
                               "OR version = ?2) ORDER BY version DESC LIMIT 1"));
  st.BindText(1, name);
  if (version) {
    st.BindInt(2, *version);
  } else {
    st.BindNull(2);
  }
  BATCHLAB_ASSIGN_OR_RETURN(bool row, st.Step());
  if (row) return SweepVersion{st.ColumnInt(0), static_cast<int>(st.ColumnInt(1))};
  BATCHLAB_ASSIGN_OR_RETURN(Statement all,
                            db.Prepare("SELECT name || ' (v' || max(version) || ')' FROM sweeps "
                                       "GROUP BY name ORDER BY name"));
  std::vector<std::string> known, names;
  while (true) {
    BATCHLAB_ASSIGN_OR_RETURN(bool r, all.Step());
    if (!r) break;
    known.push_back(all.ColumnText(0));
    names.push_back(known.back().substr(0, known.back().rfind(" (v")));
  }
  // "sweep", not "--sweep": `sweep status NAME` names it without the flag.
  const std::string what = version ? fmt::format("sweep '{}' version {}", name, *version)
                                   : fmt::format("sweep '{}'", name);
  return NotFoundError(fmt::format("{} is not in {}{}; sweeps there: {}", what, db.path(),
                                   version ? "" : DidYouMean(name, names),
                                   known.empty() ? "none (run `batchlab sweep run SPEC` first)"
                                                 : fmt::format("{}", fmt::join(known, ", "))));
}

namespace {

// A dotted --where name must be a parameter some run of the database was swept over.
Status CheckParamName(Database& db, const std::string& name) {
  BATCHLAB_ASSIGN_OR_RETURN(Statement st,
                            db.Prepare("SELECT 1 FROM run_params WHERE name = ? LIMIT 1"));
  st.BindText(1, name);
  BATCHLAB_ASSIGN_OR_RETURN(bool found, st.Step());
  if (found) return OkStatus();
  BATCHLAB_ASSIGN_OR_RETURN(Statement all,
                            db.Prepare("SELECT DISTINCT name FROM run_params ORDER BY name"));
  std::vector<std::string> names;
  while (true) {
    BATCHLAB_ASSIGN_OR_RETURN(bool row, all.Step());
    if (!row) break;
    names.push_back(all.ColumnText(0));
  }
  return InvalidArgumentError(fmt::format(
      "--where: unknown swept parameter '{}'; swept parameters in {}: {}; columns: {}", name,
      db.path(), names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", ")),
      fmt::join(RunSummaryColumns(), ", ")));
}

}  // namespace

StatusOr<Statement> PrepareRunList(Database& db, const RunListOptions& o) {
  std::vector<std::string> columns = o.columns;
  if (columns.empty()) {
    // Without --sweep, rows of several sweeps mix: say which each belongs to.
    if (!o.sweep) columns = {"sweep", "sweep_version"};
    columns.insert(columns.end(), DefaultListColumns().begin(), DefaultListColumns().end());
  }
  for (const auto& c : columns) {
    if (!IsRunSummaryColumn(c)) {
      return InvalidArgumentError(fmt::format("unknown column '{}'", c));
    }
  }
  std::string sql = fmt::format("SELECT {} FROM run_summary WHERE 1", fmt::join(columns, ", "));
  std::optional<int64_t> sweep_id;
  if (o.sweep) {
    BATCHLAB_ASSIGN_OR_RETURN(sweep_id, ResolveSweepId(db, *o.sweep, o.sweep_version));
    sql += " AND sweep_id = ?";
  }
  if (o.state) {
    BATCHLAB_RETURN_IF_ERROR(ParseRunState(*o.state).status().WithContext("--state"));
    sql += " AND state = ?";
  }
  for (const WhereExpr& e : o.where) {
    for (const auto& group : e.any_of) {
      for (const WhereFilter& f : group) {
        if (f.is_param) BATCHLAB_RETURN_IF_ERROR(CheckParamName(db, f.column));
      }
    }
    sql += " AND " + WhereSql(e);
  }
  sql += " ORDER BY sweep_id, ordinal, run_id";
  BATCHLAB_ASSIGN_OR_RETURN(Statement st, db.Prepare(sql));
  int index = 1;
  if (sweep_id) st.BindInt(index++, *sweep_id);
  if (o.state) st.BindText(index++, *o.state);
  for (const WhereExpr& e : o.where) index = BindWhereValue(st, index, e);
  return st;
}

StatusOr<Statement> PrepareSweepList(Database& db) {
  return db.Prepare(
      "SELECT s.name AS sweep, s.version AS version, count(r.run_key) AS runs, "
      "coalesce(sum(r.state IN "
      "('completed','target_reached','budget_exhausted','diverged','pruned','stalled')), 0) "
      "AS finished, coalesce(sum(r.state = 'running'), 0) AS running, "
      "coalesce(sum(r.state = 'pending'), 0) AS pending, "
      "coalesce(sum(r.state IN ('failed','timed_out')), 0) AS failed, "
      "coalesce(sum(r.state = 'cancelled'), 0) AS cancelled, "
      "s.spec_hash AS spec_hash, s.created_at AS created_at "
      "FROM sweeps s LEFT JOIN runs r ON r.sweep_id = s.id "
      "GROUP BY s.id ORDER BY s.name, s.version");
}

StatusOr<std::vector<LatestSweep>> ListLatestSweeps(Database& db) {
  BATCHLAB_ASSIGN_OR_RETURN(
      Statement st,
      db.Prepare("SELECT s.name, s.version, (SELECT count(*) FROM runs r WHERE "
                 "r.sweep_id = s.id) FROM sweeps s WHERE s.version = (SELECT "
                 "max(version) FROM sweeps t WHERE t.name = s.name) ORDER BY s.name"));
  std::vector<LatestSweep> out;
  while (true) {
    BATCHLAB_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.push_back({st.ColumnText(0), static_cast<int>(st.ColumnInt(1)), st.ColumnInt(2)});
  }
  return out;
}

StatusOr<Statement> PrepareUserQuery(Database& db, const std::string& sql) {
  auto st = db.Prepare(sql);
  if (!st.ok()) {
    return InvalidArgumentError(fmt::format("query: {}", st.status().message()));
  }
  if (!st->IsReadOnly()) {
    return InvalidArgumentError(
        "query: only read-only SQL is accepted (SELECT, WITH ... SELECT, read-only PRAGMA); the "
        "database is opened read-only and this statement would change it");
  }
  return st;
}

StatusOr<Statement> PrepareRunsExport(Database& db, int64_t sweep_id) {
  std::string columns;
  for (const auto& c : RunSummaryColumns()) columns += fmt::format("s.{0} AS {0}, ", c);
  BATCHLAB_ASSIGN_OR_RETURN(Statement st,
                            db.Prepare(fmt::format("SELECT {}r.config_json AS config_json "
                                                   "FROM run_summary s JOIN runs r ON r.run_key = "
                                                   "s.run_key WHERE s.sweep_id = ? "
                                                   "ORDER BY s.ordinal, s.run_id",
                                                   columns)));
  st.BindInt(1, sweep_id);
  return st;
}

StatusOr<Statement> PrepareMetricsExport(Database& db, int64_t sweep_id) {
  BATCHLAB_ASSIGN_OR_RETURN(
      Statement st,
      db.Prepare("SELECT r.id AS run_id, m.attempt AS attempt, m.seq AS seq, m.step AS step, "
                 "n.name AS name, m.value AS value "
                 "FROM runs r "
                 "JOIN metrics m ON m.run_key = r.run_key AND m.attempt = r.attempt "
                 "JOIN metric_names n ON n.id = m.name_id "
                 "WHERE r.sweep_id = ? ORDER BY r.ordinal, r.id, m.seq, m.name_id"));
  st.BindInt(1, sweep_id);
  return st;
}

StatusOr<std::string> ResolveRunId(Database& db, const std::string& id_or_prefix) {
  if (id_or_prefix.size() < 4) {
    return InvalidArgumentError(fmt::format(
        "run id '{}' is too short: give the full id or a prefix of at least 4 characters",
        id_or_prefix));
  }
  BATCHLAB_ASSIGN_OR_RETURN(
      Statement st, db.Prepare("SELECT id FROM runs WHERE id = ?1 OR "
                               "substr(id, 1, length(?1)) = ?1 ORDER BY id != ?1, id LIMIT 3"));
  st.BindText(1, id_or_prefix);
  std::vector<std::string> matches;
  while (true) {
    BATCHLAB_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    matches.push_back(st.ColumnText(0));
  }
  if (matches.empty()) {
    return NotFoundError(fmt::format("no run '{}' in {} (list runs with `batchlab results list`)",
                                     id_or_prefix, db.path()));
  }
  if (matches[0] == id_or_prefix || matches.size() == 1) return matches[0];
  return InvalidArgumentError(
      fmt::format("run id prefix '{}' is ambiguous: {}, ...; give more "
                  "characters",
                  id_or_prefix, fmt::join(matches, ", ")));
}

}  // namespace batchlab::results
