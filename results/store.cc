// The SQLite implementation of the writer API in store.h.
#include "base/elapsed.h"
#include "results/store.h"

#include <unistd.h>

#include <array>
#include <chrono>
#include <functional>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "results/database.h"
#include "results/metrics_ingest.h"
#include "results/schema.h"
#include "base/run_protocol.h"
#include "results/writer_lock.h"

namespace batchlab::results {
namespace {

using nlohmann::json;

// The finished states are the protocol's final outcomes, by the same names (base/run_protocol.h).
constexpr const char* Named(protocol::Outcome o) { return protocol::EntryOf(o).name.data(); }
constexpr std::array<std::pair<RunState, const char*>, 11> kStateNames = {{
    {RunState::kPending, "pending"},
    {RunState::kRunning, "running"},
    {RunState::kCompleted, Named(protocol::Outcome::kCompleted)},
    {RunState::kTargetReached, Named(protocol::Outcome::kTargetReached)},
    {RunState::kDiverged, Named(protocol::Outcome::kDiverged)},
    {RunState::kBudgetExhausted, Named(protocol::Outcome::kBudgetExhausted)},
    {RunState::kFailed, "failed"},
    {RunState::kTimedOut, "timed_out"},
    {RunState::kCancelled, "cancelled"},
    {RunState::kPruned, Named(protocol::Outcome::kPruned)},
    // Not a program's outcome: the orchestrator's verdict on a run it stopped (spec "stall").
    {RunState::kStalled, "stalled"},
}};


std::string HostName() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "";
  return buf;
}

// The typed parameter columns of `runs`, each read from the resolved config by JSON pointer,
// or else from the swept params by its dotted name.
struct TypedColumn {
  const char* column;
  const char* pointer;
  const char* param;
};
constexpr TypedColumn kTypedColumns[] = {
    {"batch_size", "/batch_size", "batch_size"},
    {"nodes", "/nodes", "nodes"},
    {"ranks_per_node", "/ranks_per_node", "ranks_per_node"},
    {"world_size", "/world_size", "world_size"},
    {"local_batch_size", "/local_batch_size", "local_batch_size"},
    {"accumulation", "/accumulation", "accumulation"},
    {"optimizer", "/optimizer/name", "optimizer.name"},
    {"lr_rule", "/lr/rule", "lr.rule"},
    {"lr_base", "/lr/base", "lr.base"},
    {"lr_base_batch_size", "/lr/base_batch_size", "lr.base_batch_size"},
    {"seed", "/seed", "seed"},
    {"model", "/model/name", "model.name"},
    {"dataset", "/data/name", "data.name"},
    {"precision", "/precision", "precision"},
    {"comm_backend", "/comm/backend", "comm.backend"},
};

// Binds a JSON scalar with its SQLite type (integer, real, text); anything else as JSON text.
void BindJson(Statement& st, int index, const json& v) {
  if (v.is_null()) {
    st.BindNull(index);
  } else if (v.is_boolean()) {
    st.BindInt(index, v.get<bool>() ? 1 : 0);
  } else if (v.is_number_integer()) {
    st.BindInt(index, v.get<int64_t>());
  } else if (v.is_number()) {
    st.BindDouble(index, v.get<double>());
  } else if (v.is_string()) {
    st.BindText(index, v.get_ref<const std::string&>());
  } else {
    st.BindText(index, v.dump());
  }
}

class SqliteStore final : public Store {
 public:
  SqliteStore(WriterLock lock, std::unique_ptr<Database> db, std::string id)
      : lock_(std::move(lock)), db_(std::move(db)), ingester_(*db_), id_(std::move(id)) {}

  const std::string& database_id() const override { return id_; }

  StatusOr<std::optional<SweepRecord>> LatestSweep(const std::string& name) override {
    BATCHLAB_ASSIGN_OR_RETURN(
        Statement st, db_->Prepare("SELECT id, name, version, spec_json, spec_hash, created_at "
                                   "FROM sweeps WHERE name = ? ORDER BY version DESC LIMIT 1"));
    st.BindText(1, name);
    BATCHLAB_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) return std::optional<SweepRecord>();
    SweepRecord s;
    s.id = st.ColumnInt(0);
    s.name = st.ColumnText(1);
    s.version = static_cast<int>(st.ColumnInt(2));
    s.spec_json = st.ColumnText(3);
    s.spec_hash = st.ColumnText(4);
    s.created_at = st.ColumnDouble(5);
    return std::optional<SweepRecord>(std::move(s));
  }

  StatusOr<SweepRecord> CreateSweep(const std::string& name, const std::string& spec_json,
                                    const std::string& spec_hash) override {
    BATCHLAB_ASSIGN_OR_RETURN(auto tx, Transaction::Begin(*db_));
    BATCHLAB_ASSIGN_OR_RETURN(auto latest, LatestSweep(name));
    SweepRecord s;
    s.name = name;
    s.version = latest ? latest->version + 1 : 1;
    s.spec_json = spec_json;
    s.spec_hash = spec_hash;
    s.created_at = UnixSeconds();
    BATCHLAB_ASSIGN_OR_RETURN(
        Statement st, db_->Prepare("INSERT INTO sweeps(name, version, spec_json, spec_hash, "
                                   "created_at) VALUES(?, ?, ?, ?, ?)"));
    st.BindText(1, name).BindInt(2, s.version).BindText(3, spec_json).BindText(4, spec_hash);
    BATCHLAB_RETURN_IF_ERROR(st.BindDouble(5, s.created_at).Run());
    s.id = db_->LastInsertRowId();
    BATCHLAB_RETURN_IF_ERROR(tx.Commit());
    return s;
  }

  Status UpdateSweepSpec(int64_t sweep_id, const std::string& spec_json,
                         const std::string& spec_hash) override {
    BATCHLAB_ASSIGN_OR_RETURN(
        Statement st, db_->Prepare("UPDATE sweeps SET spec_json = ?, spec_hash = ? WHERE id = ?"));
    st.BindText(1, spec_json).BindText(2, spec_hash).BindInt(3, sweep_id);
    return st.Run();
  }

  Status AddRun(const RunRecord& run) override {
    json config = json::parse(run.config_json, nullptr, false);
    if (config.is_discarded() || !config.is_object()) {
      return InvalidArgumentError(fmt::format("run {}: config_json is not a JSON object", run.id));
    }
    std::map<std::string, json> params;
    for (const auto& [name, text] : run.params) {
      json v = json::parse(text, nullptr, false);
      if (v.is_discarded()) {
        return InvalidArgumentError(
            fmt::format("run {}: parameter `{}` = '{}' is not a JSON value (strings need quotes)",
                        run.id, name, text));
      }
      params[name] = std::move(v);
    }
    BATCHLAB_ASSIGN_OR_RETURN(auto tx, Transaction::Begin(*db_));
    std::string columns =
        "id, sweep_id, ordinal, config_json, state, attempt, exit_code, host, "
        "started_at, ended_at";
    std::string marks = "?, ?, ?, ?, ?, ?, ?, ?, ?, ?";
    for (const auto& c : kTypedColumns) {
      columns += fmt::format(", {}", c.column);
      marks += ", ?";
    }
    BATCHLAB_ASSIGN_OR_RETURN(
        Statement st,
        db_->Prepare(fmt::format("INSERT OR IGNORE INTO runs({}) VALUES({})", columns, marks)));
    st.BindText(1, run.id)
        .BindInt(2, run.sweep_id)
        .BindInt(3, run.ordinal)
        .BindText(4, run.config_json)
        .BindText(5, RunStateName(run.state))
        .BindInt(6, run.attempt)
        .BindOptionalInt(7, run.exit_code ? std::optional<int64_t>(*run.exit_code) : std::nullopt)
        .BindText(8, run.host)
        .BindOptionalDouble(9, run.started_at)
        .BindOptionalDouble(10, run.ended_at);
    int index = 11;
    for (const auto& c : kTypedColumns) {
      const json::json_pointer ptr(c.pointer);
      if (config.contains(ptr)) {
        BindJson(st, index, config.at(ptr));
      } else if (auto it = params.find(c.param); it != params.end()) {
        BindJson(st, index, it->second);
      } else {
        st.BindNull(index);
      }
      ++index;
    }
    BATCHLAB_RETURN_IF_ERROR(st.Run().WithContext(fmt::format("adding run {}", run.id)));
    if (db_->Changes() == 0) return OkStatus();  // already there: left as it is
    const int64_t run_key = db_->LastInsertRowId();
    BATCHLAB_ASSIGN_OR_RETURN(
        Statement p, db_->Prepare("INSERT INTO run_params(run_key, name, value) VALUES(?, ?, ?)"));
    for (const auto& [name, value] : params) {
      p.BindInt(1, run_key).BindText(2, name);
      BindJson(p, 3, value);
      BATCHLAB_RETURN_IF_ERROR(p.Run());
    }
    return tx.Commit();
  }

  StatusOr<std::vector<RunRecord>> RunsOfSweep(int64_t sweep_id) override {
    return ReadRuns("sweep_id = ?", [&](Statement& st) { st.BindInt(1, sweep_id); });
  }

  StatusOr<std::optional<RunRecord>> FindRun(const std::string& run_id) override {
    BATCHLAB_ASSIGN_OR_RETURN(std::vector<RunRecord> runs,
                              ReadRuns("id = ?", [&](Statement& st) { st.BindText(1, run_id); }));
    if (runs.empty()) return std::optional<RunRecord>();
    return std::optional<RunRecord>(std::move(runs.front()));
  }

  // The runs matching `where` (its parameters bound by `bind`), with their parameters.
  StatusOr<std::vector<RunRecord>> ReadRuns(const std::string& where,
                                            const std::function<void(Statement&)>& bind) {
    BATCHLAB_ASSIGN_OR_RETURN(
        Statement st,
        db_->Prepare("SELECT run_key, id, sweep_id, ordinal, config_json, state, attempt, "
                     "exit_code, host, started_at, ended_at FROM runs WHERE " + where +
                     " ORDER BY ordinal, id"));
    BATCHLAB_ASSIGN_OR_RETURN(Statement p,
                              db_->Prepare("SELECT name, json_quote(value) FROM run_params "
                                           "WHERE run_key = ? ORDER BY name"));
    bind(st);
    std::vector<RunRecord> out;
    while (true) {
      BATCHLAB_ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      RunRecord r;
      const int64_t run_key = st.ColumnInt(0);
      r.id = st.ColumnText(1);
      r.sweep_id = st.ColumnInt(2);
      r.ordinal = static_cast<int>(st.ColumnInt(3));
      r.config_json = st.ColumnText(4);
      BATCHLAB_ASSIGN_OR_RETURN(r.state, ParseRunState(st.ColumnText(5)));
      r.attempt = static_cast<int>(st.ColumnInt(6));
      if (!st.ColumnIsNull(7)) r.exit_code = static_cast<int>(st.ColumnInt(7));
      r.host = st.ColumnText(8);
      r.started_at = st.ColumnOptionalDouble(9);
      r.ended_at = st.ColumnOptionalDouble(10);
      p.BindInt(1, run_key);
      while (true) {
        BATCHLAB_ASSIGN_OR_RETURN(bool prow, p.Step());
        if (!prow) break;
        r.params[p.ColumnText(0)] = p.ColumnText(1);
      }
      BATCHLAB_RETURN_IF_ERROR(p.Reset());
      out.push_back(std::move(r));
    }
    return out;
  }

  Status Transition(const std::string& run_id, RunState to, const RunOutcome& outcome) override {
    return DoTransition(run_id, to, outcome, "");
  }

  Status StartAttempt(const std::string& run_id, const std::string& attempt_dir) override {
    return DoTransition(run_id, RunState::kRunning, {}, attempt_dir);
  }

  Status DoTransition(const std::string& run_id, RunState to, const RunOutcome& outcome,
                      const std::string& attempt_dir) {
    BATCHLAB_ASSIGN_OR_RETURN(auto tx, Transaction::Begin(*db_));
    BATCHLAB_ASSIGN_OR_RETURN(
        Statement q, db_->Prepare("SELECT run_key, state, attempt FROM runs WHERE id = ?"));
    q.BindText(1, run_id);
    BATCHLAB_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) return NotFoundError(fmt::format("no run with id {}", run_id));
    const int64_t run_key = q.ColumnInt(0);
    const std::string from = q.ColumnText(1);
    int64_t attempt = q.ColumnInt(2);
    const double now = UnixSeconds();
    const std::optional<int64_t> exit_code =
        outcome.exit_code ? std::optional<int64_t>(*outcome.exit_code) : std::nullopt;
    Statement u;
    if (to == RunState::kRunning) {
      ++attempt;
      BATCHLAB_ASSIGN_OR_RETURN(
          u, db_->Prepare("UPDATE runs SET state = ?, attempt = ?, host = ?, started_at = ?, "
                          "ended_at = NULL, exit_code = NULL, outcome = NULL, steps = NULL, "
                          "samples = NULL, seconds = NULL, target_step = NULL, "
                          "target_samples = NULL, target_seconds = NULL, final_test_loss = NULL, "
                          "final_test_accuracy = NULL WHERE run_key = ?"));
      u.BindText(1, RunStateName(to))
          .BindInt(2, attempt)
          .BindText(3, HostName())
          .BindDouble(4, now)
          .BindInt(5, run_key);
    } else if (IsTerminal(to)) {
      BATCHLAB_ASSIGN_OR_RETURN(
          u, db_->Prepare("UPDATE runs SET state = ?, ended_at = ?, "
                          "exit_code = coalesce(?, exit_code) WHERE run_key = ?"));
      u.BindText(1, RunStateName(to)).BindDouble(2, now).BindOptionalInt(3, exit_code);
      u.BindInt(4, run_key);
    } else {
      BATCHLAB_ASSIGN_OR_RETURN(u, db_->Prepare("UPDATE runs SET state = ? WHERE run_key = ?"));
      u.BindText(1, RunStateName(to)).BindInt(2, run_key);
    }
    BATCHLAB_RETURN_IF_ERROR(u.Run());
    if (to == RunState::kRunning && !attempt_dir.empty()) {
      BATCHLAB_ASSIGN_OR_RETURN(
          Statement a, db_->Prepare("INSERT OR REPLACE INTO attempts(run_key, attempt, dir, "
                                    "started_at) VALUES(?, ?, ?, ?)"));
      a.BindInt(1, run_key).BindInt(2, attempt).BindText(3, attempt_dir).BindDouble(4, now);
      BATCHLAB_RETURN_IF_ERROR(a.Run());
    }
    BATCHLAB_ASSIGN_OR_RETURN(
        Statement e, db_->Prepare("INSERT INTO events(run_key, attempt, time, kind, from_state, "
                                  "to_state, message) VALUES(?, ?, ?, 'transition', ?, ?, ?)"));
    std::string message = outcome.message;
    if (exit_code) {
      message = fmt::format("exit code {}{}{}", *exit_code, message.empty() ? "" : ": ", message);
    }
    e.BindInt(1, run_key).BindInt(2, attempt).BindDouble(3, now).BindText(4, from);
    BATCHLAB_RETURN_IF_ERROR(e.BindText(5, RunStateName(to)).BindText(6, message).Run());
    return tx.Commit();
  }

  StatusOr<std::optional<std::string>> AttemptDir(const std::string& run_id, int attempt) override {
    BATCHLAB_ASSIGN_OR_RETURN(
        Statement q, db_->Prepare("SELECT a.dir FROM attempts a JOIN runs r USING (run_key) "
                                  "WHERE r.id = ? AND a.attempt = ?"));
    q.BindText(1, run_id).BindInt(2, attempt);
    BATCHLAB_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) return std::optional<std::string>();
    return std::optional<std::string>(q.ColumnText(0));
  }

  StatusOr<IngestStats> IngestMetrics(const std::string& run_id, int attempt,
                                      const std::string& path, IngestPass pass) override {
    BATCHLAB_ASSIGN_OR_RETURN(int64_t run_key, RunKey(run_id));
    return ingester_.Ingest(run_key, attempt, path, pass);
  }

  StatusOr<TargetProgress> TargetProgressOf(const std::string& run_id, const std::string& metric,
                                            const std::string& op, double value) override {
    if (op != ">=" && op != ">" && op != "<=" && op != "<") {
      return InvalidArgumentError(fmt::format("target operator '{}': use >=, >, <= or <", op));
    }
    // `op` is one of four fixed strings: the only text not bound as a parameter.
    BATCHLAB_ASSIGN_OR_RETURN(
        Statement q,
        db_->Prepare(fmt::format(
            "SELECT min(CASE WHEN m.value {} ?1 THEN m.step END), max(m.step) FROM metrics m "
            "JOIN runs r ON r.run_key = m.run_key AND r.attempt = m.attempt "
            "WHERE r.id = ?2 AND m.name_id = (SELECT id FROM metric_names WHERE name = ?3)",
            op)));
    q.BindDouble(1, value).BindText(2, run_id).BindText(3, metric);
    BATCHLAB_ASSIGN_OR_RETURN(bool row, q.Step());
    TargetProgress p;
    if (row) {
      p.hit_step = q.ColumnOptionalInt(0);
      p.last_step = q.ColumnOptionalInt(1);
    }
    return p;
  }

  StatusOr<std::vector<double>> RecentValuesOf(const std::string& run_id,
                                               const std::string& metric, int n) override {
    BATCHLAB_ASSIGN_OR_RETURN(
        Statement q,
        db_->Prepare("SELECT m.value FROM metrics m JOIN runs r ON r.run_key = m.run_key AND "
                     "r.attempt = m.attempt WHERE r.id = ?1 AND m.name_id = (SELECT id FROM "
                     "metric_names WHERE name = ?2) ORDER BY m.step DESC, m.seq DESC LIMIT ?3"));
    q.BindText(1, run_id).BindText(2, metric).BindInt(3, n);
    std::vector<double> out;
    while (true) {
      BATCHLAB_ASSIGN_OR_RETURN(bool row, q.Step());
      if (!row) break;
      out.push_back(q.ColumnDouble(0));
    }
    return out;
  }

  Status RecordEvent(const std::string& run_id, const std::string& kind,
                     const std::string& message) override {
    BATCHLAB_ASSIGN_OR_RETURN(
        Statement e, db_->Prepare("INSERT INTO events(run_key, attempt, time, kind, message) "
                                  "SELECT run_key, attempt, ?, ?, ? FROM runs WHERE id = ?"));
    e.BindDouble(1, UnixSeconds()).BindText(2, kind).BindText(3, message).BindText(4, run_id);
    BATCHLAB_RETURN_IF_ERROR(e.Run());
    if (db_->Changes() == 0) return NotFoundError(fmt::format("no run with id {}", run_id));
    return OkStatus();
  }

 private:
  StatusOr<int64_t> RunKey(const std::string& run_id) {
    BATCHLAB_ASSIGN_OR_RETURN(Statement q, db_->Prepare("SELECT run_key FROM runs WHERE id = ?"));
    q.BindText(1, run_id);
    BATCHLAB_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) return NotFoundError(fmt::format("no run with id {}", run_id));
    return q.ColumnInt(0);
  }

  WriterLock lock_;  // held as long as the store is open
  std::unique_ptr<Database> db_;
  MetricsIngester ingester_;
  std::string id_;
};

}  // namespace

const char* RunStateName(RunState s) {
  for (const auto& [state, name] : kStateNames) {
    if (state == s) return name;
  }
  return "unknown";
}

StatusOr<RunState> ParseRunState(const std::string& name) {
  std::string valid;
  for (const auto& [state, n] : kStateNames) {
    if (name == n) return state;
    valid += valid.empty() ? n : std::string(", ") + n;
  }
  return InvalidArgumentError(fmt::format("unknown run state '{}'; valid states: {}", name, valid));
}

std::optional<RunState> FinalStateOf(protocol::Outcome outcome) {
  switch (outcome) {
    case protocol::Outcome::kCompleted: return RunState::kCompleted;
    case protocol::Outcome::kTargetReached: return RunState::kTargetReached;
    case protocol::Outcome::kDiverged: return RunState::kDiverged;
    case protocol::Outcome::kBudgetExhausted: return RunState::kBudgetExhausted;
    case protocol::Outcome::kPruned: return RunState::kPruned;
    case protocol::Outcome::kPreempted: return std::nullopt;
  }
  return std::nullopt;
}

std::optional<RunState> FinalStateOfExitCode(int code) {
  const std::optional<protocol::Outcome> o = protocol::OutcomeForExitCode(code);
  return o ? FinalStateOf(*o) : std::nullopt;
}

std::optional<RunState> FinalStateOfOutcomeName(std::string_view name) {
  const std::optional<protocol::Outcome> o = protocol::ParseOutcome(name);
  return o ? FinalStateOf(*o) : std::nullopt;
}

bool IsTerminal(RunState s) { return s != RunState::kPending && s != RunState::kRunning; }

bool IsFinished(RunState s) {
  return s == RunState::kCompleted || s == RunState::kTargetReached || s == RunState::kDiverged ||
         s == RunState::kBudgetExhausted || s == RunState::kPruned || s == RunState::kStalled;
}

StatusOr<std::unique_ptr<Store>> Store::Open(const std::string& path) {
  BATCHLAB_ASSIGN_OR_RETURN(WriterLock lock, WriterLock::Acquire(path));
  BATCHLAB_ASSIGN_OR_RETURN(auto db, OpenForWriting(path));
  BATCHLAB_ASSIGN_OR_RETURN(Statement q,
                            db->Prepare("SELECT value FROM database_info WHERE key = 'id'"));
  BATCHLAB_ASSIGN_OR_RETURN(bool row, q.Step());
  if (!row) return FailedPreconditionError(fmt::format("{} has no database id", path));
  std::string id = q.ColumnText(0);
  return std::unique_ptr<Store>(
      std::make_unique<SqliteStore>(std::move(lock), std::move(db), std::move(id)));
}

}  // namespace batchlab::results
