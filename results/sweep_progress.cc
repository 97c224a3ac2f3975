// Reading a sweep's live state (see sweep_progress.h). Every query is indexed: runs by
// (sweep_id, ordinal), metrics by their primary key (run_key, attempt, seq, name_id), read
// newest first, so the cost grows with the number of runs, not with the metrics stored.
#include "results/sweep_progress.h"

#include <fmt/core.h>

#include "results/run_query.h"

namespace batchlab::results {

namespace {

struct Queries {
  Statement last_named;  // (run_key, attempt, name) -> step, value of the newest row
  Statement last_eval;   // (run_key, attempt) -> seq, step of the newest test_* row
  Statement line;        // (run_key, attempt, seq) -> name, value
  Statement params;      // run_key -> name, value
};

StatusOr<Queries> Prepare(Database& db) {
  Queries q;
  BATCHLAB_ASSIGN_OR_RETURN(
      q.last_named,
      db.Prepare("SELECT m.step, m.value FROM metrics m WHERE m.run_key = ?1 AND m.attempt = ?2 "
                 "AND m.name_id = (SELECT id FROM metric_names WHERE name = ?3) "
                 "ORDER BY m.seq DESC LIMIT 1"));
  BATCHLAB_ASSIGN_OR_RETURN(
      q.last_eval,
      db.Prepare("SELECT m.seq, m.step FROM metrics m WHERE m.run_key = ?1 AND m.attempt = ?2 "
                 "AND m.name_id IN (SELECT id FROM metric_names WHERE name LIKE 'test\\_%' "
                 "ESCAPE '\\') ORDER BY m.seq DESC LIMIT 1"));
  BATCHLAB_ASSIGN_OR_RETURN(
      q.line, db.Prepare("SELECT n.name, m.value FROM metrics m JOIN metric_names n ON n.id = "
                         "m.name_id WHERE m.run_key = ?1 AND m.attempt = ?2 AND m.seq = ?3 "
                         "AND n.name LIKE 'test\\_%' ESCAPE '\\' ORDER BY n.name"));
  BATCHLAB_ASSIGN_OR_RETURN(
      q.params, db.Prepare("SELECT name, value FROM run_params WHERE run_key = ? ORDER BY name"));
  return q;
}

Status FillMetrics(Queries& q, int64_t run_key, RunSnapshot& r) {
  q.last_named.BindInt(1, run_key).BindInt(2, r.attempt).BindText(3, "loss");
  BATCHLAB_ASSIGN_OR_RETURN(bool row, q.last_named.Step());
  if (row) {
    r.step = q.last_named.ColumnOptionalInt(0);
    r.loss = q.last_named.ColumnOptionalDouble(1);
  }
  BATCHLAB_RETURN_IF_ERROR(q.last_named.Reset());
  q.last_named.BindInt(1, run_key).BindInt(2, r.attempt).BindText(3, "checkpoint_time");
  BATCHLAB_ASSIGN_OR_RETURN(row, q.last_named.Step());
  if (row) {
    r.checkpoint_step = q.last_named.ColumnOptionalInt(0);
    r.checkpoint_time = q.last_named.ColumnOptionalDouble(1);
  }
  BATCHLAB_RETURN_IF_ERROR(q.last_named.Reset());
  q.last_eval.BindInt(1, run_key).BindInt(2, r.attempt);
  BATCHLAB_ASSIGN_OR_RETURN(row, q.last_eval.Step());
  if (row) {
    EvalSnapshot ev;
    const int64_t seq = q.last_eval.ColumnInt(0);
    ev.step = q.last_eval.ColumnInt(1);
    if (!r.step || *r.step < ev.step) r.step = ev.step;
    q.line.BindInt(1, run_key).BindInt(2, r.attempt).BindInt(3, seq);
    while (true) {
      BATCHLAB_ASSIGN_OR_RETURN(bool v, q.line.Step());
      if (!v) break;
      ev.values[q.line.ColumnText(0)] = q.line.ColumnDouble(1);
    }
    BATCHLAB_RETURN_IF_ERROR(q.line.Reset());
    r.last_eval = std::move(ev);
  }
  return q.last_eval.Reset();
}

}  // namespace

StatusOr<SweepSnapshot> ReadSweepSnapshot(Database& db, const std::string& name,
                                          std::optional<int> version) {
  BATCHLAB_ASSIGN_OR_RETURN(int64_t sweep_id, ResolveSweepId(db, name, version));
  SweepSnapshot snap;
  snap.name = name;
  BATCHLAB_ASSIGN_OR_RETURN(Statement sweep,
                            db.Prepare("SELECT version, spec_hash FROM sweeps WHERE id = ?"));
  sweep.BindInt(1, sweep_id);
  BATCHLAB_ASSIGN_OR_RETURN(bool found, sweep.Step());
  if (found) {
    snap.version = static_cast<int>(sweep.ColumnInt(0));
    snap.spec_hash = sweep.ColumnText(1);
  }
  BATCHLAB_ASSIGN_OR_RETURN(Queries q, Prepare(db));
  BATCHLAB_ASSIGN_OR_RETURN(
      Statement runs,
      db.Prepare("SELECT run_key, id, ordinal, state, attempt, host, config_json, batch_size, "
                 "world_size, started_at, ended_at FROM runs WHERE sweep_id = ? ORDER BY ordinal"));
  runs.BindInt(1, sweep_id);
  while (true) {
    BATCHLAB_ASSIGN_OR_RETURN(bool row, runs.Step());
    if (!row) break;
    const int64_t run_key = runs.ColumnInt(0);
    RunSnapshot r;
    r.id = runs.ColumnText(1);
    r.ordinal = static_cast<int>(runs.ColumnInt(2));
    r.state = runs.ColumnText(3);
    r.attempt = static_cast<int>(runs.ColumnInt(4));
    r.host = runs.ColumnText(5);
    r.config_json = runs.ColumnText(6);
    r.batch_size = runs.ColumnOptionalInt(7).value_or(0);
    r.world_size = static_cast<int>(runs.ColumnOptionalInt(8).value_or(1));
    r.started_at = runs.ColumnOptionalDouble(9);
    r.ended_at = runs.ColumnOptionalDouble(10);
    q.params.BindInt(1, run_key);
    while (true) {
      BATCHLAB_ASSIGN_OR_RETURN(bool p, q.params.Step());
      if (!p) break;
      if (q.params.ColumnText(0) == "seed") continue;
      r.params += fmt::format("{}{}={}", r.params.empty() ? "" : " ", q.params.ColumnText(0),
                              q.params.ColumnText(1));
    }
    BATCHLAB_RETURN_IF_ERROR(q.params.Reset());
    if (r.attempt > 0) BATCHLAB_RETURN_IF_ERROR(FillMetrics(q, run_key, r));
    snap.runs.push_back(std::move(r));
  }
  BATCHLAB_ASSIGN_OR_RETURN(
      Statement lines,
      db.Prepare("SELECT coalesce(sum(c.lines), 0) FROM ingest_cursors c JOIN runs r ON "
                 "r.run_key = c.run_key WHERE r.sweep_id = ?"));
  lines.BindInt(1, sweep_id);
  BATCHLAB_ASSIGN_OR_RETURN(bool any, lines.Step());
  if (any) snap.lines_ingested = lines.ColumnInt(0);
  return snap;
}

}  // namespace batchlab::results
