// Read-only loading of a sweep from the results database (see sweep_data.h).
#include "analysis/sweep_data.h"

#include <algorithm>
#include <memory>
#include <numeric>
#include <thread>
#include <unordered_map>

#include <fmt/core.h>
#include <sqlite3.h>
#include <nlohmann/json.hpp>

#include "results/database.h"
#include "results/schema.h"

namespace batchlab::analysis {

namespace {

// The text of a run_params value as JSON: integers and reals as numbers, text quoted.
std::string ParamText(const results::Statement& st, int col) {
  switch (st.ColumnType(col)) {
    case SQLITE_INTEGER:
      return std::to_string(st.ColumnInt(col));
    case SQLITE_FLOAT:
      return fmt::format("{}", st.ColumnDouble(col));
    case SQLITE_NULL:
      return "null";
    default:
      return nlohmann::json(st.ColumnText(col)).dump();
  }
}

StatusOr<std::pair<int64_t, int>> FindSweep(results::Database& db, const std::string& name,
                                            int version) {
  BATCHLAB_ASSIGN_OR_RETURN(
      results::Statement st,
      db.Prepare(version > 0 ? "SELECT id, version FROM sweeps WHERE name = ?1 AND version = ?2"
                             : "SELECT id, version FROM sweeps WHERE name = ?1 "
                               "ORDER BY version DESC LIMIT 1"));
  st.BindText(1, name);
  if (version > 0) st.BindInt(2, version);
  BATCHLAB_ASSIGN_OR_RETURN(bool row, st.Step());
  if (row) return std::make_pair(st.ColumnInt(0), static_cast<int>(st.ColumnInt(1)));
  BATCHLAB_ASSIGN_OR_RETURN(
      results::Statement names,
      db.Prepare("SELECT name || ' (v' || max(version) || ')' FROM sweeps GROUP BY name "
                 "ORDER BY name"));
  std::string known;
  while (true) {
    BATCHLAB_ASSIGN_OR_RETURN(bool more, names.Step());
    if (!more) break;
    known += (known.empty() ? "" : ", ") + names.ColumnText(0);
  }
  return NotFoundError(
      fmt::format("--sweep '{}'{}: no such sweep in {}; known sweeps: {}", name,
                  version > 0 ? fmt::format(" version {}", version) : "", db.path(),
                  known.empty() ? "(none: run `batchlab sweep run SPEC` first)" : known));
}

// The hot loop: every wanted metric row of the sweep's runs (current attempt), appended to its
// series. Uses the raw statement (no per-row Status or string) and resolves (run, metric) to a
// Series* through a per-run slot table, since rows alternate between names line by line.
// `part` of `parts`: only runs with run_key % parts == part, so several connections can scan
// disjoint runs in parallel (each run's series are written by one thread only).
Status ReadMetrics(results::Database& db, int64_t sweep_id, int parts, int part,
                   const std::unordered_map<int64_t, std::string>& names,
                   const std::unordered_map<int64_t, size_t>& by_key, std::vector<RunData>& runs) {
  std::string ids;
  int64_t max_id = 0;
  for (const auto& [id, n] : names) {
    ids += (ids.empty() ? "" : ",") + std::to_string(id);
    max_id = std::max(max_id, id);
  }
  // The ids are integers read from the database itself, so pasting them is safe.
  const std::string sql =
      "SELECT m.run_key, m.name_id, m.step, m.value FROM runs r "
      "JOIN metrics m ON m.run_key = r.run_key AND m.attempt = r.attempt "
      "WHERE r.sweep_id = ?1 AND r.run_key % ?2 = ?3 AND m.name_id IN (" +
      ids + ")";
  sqlite3* h = db.handle();
  sqlite3_stmt* raw = nullptr;
  BATCHLAB_SQLITE_CHECK(h, sqlite3_prepare_v2(h, sql.c_str(), -1, &raw, nullptr),
                        "preparing the metrics scan");
  std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> st(raw, sqlite3_finalize);
  BATCHLAB_SQLITE_CHECK(h, sqlite3_bind_int64(st.get(), 1, sweep_id), "binding the sweep id");
  BATCHLAB_SQLITE_CHECK(h, sqlite3_bind_int(st.get(), 2, parts), "binding the part count");
  BATCHLAB_SQLITE_CHECK(h, sqlite3_bind_int(st.get(), 3, part), "binding the part");
  std::vector<Series*> slot(static_cast<size_t>(max_id) + 1, nullptr);
  RunData* run = nullptr;
  int64_t last_key = -1;
  int rc;
  while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
    const int64_t key = sqlite3_column_int64(st.get(), 0);
    if (key != last_key) {
      last_key = key;
      auto it = by_key.find(key);
      run = it == by_key.end() ? nullptr : &runs[it->second];
      std::fill(slot.begin(), slot.end(), nullptr);
    }
    if (!run) continue;
    const int64_t name_id = sqlite3_column_int64(st.get(), 1);
    if (name_id < 0 || name_id > max_id) continue;
    Series*& series = slot[static_cast<size_t>(name_id)];
    if (!series) series = &run->metrics[names.at(name_id)];
    series->steps.push_back(sqlite3_column_int64(st.get(), 2));  // NULL step reads as 0
    series->values.push_back(sqlite3_column_double(st.get(), 3));
  }
  BATCHLAB_SQLITE_CHECK(h, rc, "scanning the metrics of the sweep");
  return OkStatus();
}

}  // namespace

std::vector<std::string> AnalysisMetrics(const std::string& target_metric) {
  std::vector<std::string> m = {"loss",         "samples",       "seconds",   "step_seconds",
                                "comm_seconds", "gns_b_small",   "gns_b_big", "gns_sq_small",
                                "gns_sq_big",   "test_accuracy", "test_loss"};
  if (std::find(m.begin(), m.end(), target_metric) == m.end()) m.push_back(target_metric);
  return m;
}

int64_t ModelSizeFromConfig(const std::string& config_json) {
  const nlohmann::json c = nlohmann::json::parse(config_json, nullptr, false);
  if (!c.is_object() || !c.contains("model") || !c["model"].is_object()) return 0;
  const nlohmann::json data = c.value("data", nlohmann::json::object());
  const std::string data_name = data.is_object() ? data.value("name", "") : "";
  const nlohmann::json& model = c["model"];
  const std::string name = model.value("name", "");
  if (data_name == "synthetic-linear" && name == "logreg") {
    // One regression output over data.features inputs (default 16), plus a bias unless
    // model.bias is false (docs/spec.md, runner/datasets/synthetic_linear.h).
    const int64_t features = data.value("features", int64_t{16});
    const bool bias = model.value("bias", true);
    return features + (bias ? 1 : 0);
  }
  if (data_name != "fashion-mnist") return 0;
  std::vector<int64_t> widths = {28 * 28};
  if (name == "mlp") {
    if (!model.contains("hidden") || !model["hidden"].is_array()) return 0;
    for (const auto& h : model["hidden"]) {
      if (!h.is_number_integer()) return 0;
      widths.push_back(h.get<int64_t>());
    }
  } else if (name != "logreg") {
    return 0;
  }
  widths.push_back(10);
  int64_t n = 0;
  for (size_t i = 1; i < widths.size(); ++i) n += (widths[i - 1] + 1) * widths[i];
  return n;
}

StatusOr<SweepData> LoadSweep(const std::string& db_path, const std::string& name,
                              const LoadOptions& options) {
  BATCHLAB_ASSIGN_OR_RETURN(std::unique_ptr<results::Database> db, results::OpenReadOnly(db_path));
  BATCHLAB_ASSIGN_OR_RETURN(auto sweep_id_version, FindSweep(*db, name, options.version));
  const int64_t sweep_id = sweep_id_version.first;
  SweepData sweep;
  sweep.name = name;
  sweep.version = sweep_id_version.second;

  // Memory-mapped reads save a copy per page on the large metrics scan (read-only: harmless).
  BATCHLAB_RETURN_IF_ERROR(db->Exec("PRAGMA mmap_size = 1073741824"));
  // A read transaction gives every query below the same snapshot while a sweep is writing.
  BATCHLAB_RETURN_IF_ERROR(db->Exec("BEGIN"));

  std::unordered_map<int64_t, size_t> by_key;  // run_key -> index in sweep.runs
  {
    BATCHLAB_ASSIGN_OR_RETURN(
        results::Statement st,
        db->Prepare("SELECT s.run_key, s.run_id, s.state, s.batch_size, s.nodes, s.world_size, "
                    "s.local_batch_size, s.seed, s.optimizer, s.lr_rule, r.config_json "
                    "FROM run_summary s JOIN runs r ON r.run_key = s.run_key "
                    "WHERE s.sweep_id = ?1 ORDER BY s.ordinal"));
    st.BindInt(1, sweep_id);
    while (true) {
      BATCHLAB_ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      RunData r;
      r.id = st.ColumnText(1);
      r.state = st.ColumnText(2);
      r.batch_size = st.ColumnOptionalInt(3).value_or(0);
      r.nodes = static_cast<int>(st.ColumnOptionalInt(4).value_or(1));
      r.world_size = static_cast<int>(st.ColumnOptionalInt(5).value_or(1));
      r.local_batch_size =
          st.ColumnOptionalInt(6).value_or(r.batch_size / std::max(1, r.world_size));
      r.seed = st.ColumnOptionalInt(7).value_or(0);
      r.optimizer = st.ColumnText(8);
      r.lr_rule = st.ColumnText(9);
      const std::string config = st.ColumnText(10);
      r.parameters = ModelSizeFromConfig(config);
      if (sweep.target.empty()) {
        const nlohmann::json c = nlohmann::json::parse(config, nullptr, false);
        if (c.is_object() && c.contains("target") && c["target"].is_object()) {
          const nlohmann::json& t = c["target"];
          if (t.contains("value") && t["value"].is_number()) {
            sweep.target = fmt::format("{}{}{}", t.value("metric", "test_accuracy"),
                                       t.value("op", ">="), t["value"].get<double>());
          }
        }
      }
      by_key[st.ColumnInt(0)] = sweep.runs.size();
      sweep.runs.push_back(std::move(r));
    }
  }
  {
    BATCHLAB_ASSIGN_OR_RETURN(
        results::Statement st,
        db->Prepare("SELECT p.run_key, p.name, p.value FROM run_params p "
                    "JOIN runs r ON r.run_key = p.run_key WHERE r.sweep_id = ?1"));
    st.BindInt(1, sweep_id);
    while (true) {
      BATCHLAB_ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      auto it = by_key.find(st.ColumnInt(0));
      if (it != by_key.end()) sweep.runs[it->second].params[st.ColumnText(1)] = ParamText(st, 2);
    }
  }

  // Metric names -> ids; only the wanted ones are read.
  std::unordered_map<int64_t, std::string> names;
  {
    BATCHLAB_ASSIGN_OR_RETURN(results::Statement st,
                              db->Prepare("SELECT id, name FROM metric_names"));
    while (true) {
      BATCHLAB_ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      std::string n = st.ColumnText(1);
      if (options.metrics.empty() ||
          std::find(options.metrics.begin(), options.metrics.end(), n) != options.metrics.end()) {
        names[st.ColumnInt(0)] = std::move(n);
      }
    }
  }
  if (!names.empty() && !sweep.runs.empty()) {
    // The metrics scan dominates on large sweeps: one connection per core, each over a disjoint
    // set of runs in its own read transaction. Rows of a run that is still being ingested may
    // therefore be read up to a moment later than the run list; finished runs are unaffected.
    const int parts = static_cast<int>(std::max<size_t>(
        1, std::min<size_t>({std::thread::hardware_concurrency(), 4, sweep.runs.size() / 256})));
    std::vector<Status> status(static_cast<size_t>(parts));
    std::vector<std::thread> pool;
    for (int part = 1; part < parts; ++part) {
      pool.emplace_back([&, part] {
        StatusOr<std::unique_ptr<results::Database>> conn = results::OpenReadOnly(db_path);
        Status st = conn.status();
        if (st.ok()) st = (*conn)->Exec("PRAGMA mmap_size = 1073741824");
        if (st.ok()) st = (*conn)->Exec("BEGIN");
        if (st.ok()) st = ReadMetrics(**conn, sweep_id, parts, part, names, by_key, sweep.runs);
        status[static_cast<size_t>(part)] = st;
      });
    }
    status[0] = ReadMetrics(*db, sweep_id, parts, 0, names, by_key, sweep.runs);
    for (std::thread& t : pool) t.join();
    for (const Status& st : status) BATCHLAB_RETURN_IF_ERROR(st);
  }
  BATCHLAB_RETURN_IF_ERROR(db->Exec("COMMIT"));

  // Rows arrive in (run, seq) order, which is step order for the runner's lines; sort anything
  // else (a stable sort keeps equal steps in seq order).
  for (RunData& r : sweep.runs) {
    for (auto& [n, s] : r.metrics) {
      if (std::is_sorted(s.steps.begin(), s.steps.end())) continue;
      std::vector<size_t> idx(s.size());
      std::iota(idx.begin(), idx.end(), 0);
      std::stable_sort(idx.begin(), idx.end(),
                       [&](size_t a, size_t b) { return s.steps[a] < s.steps[b]; });
      Series sorted;
      for (size_t i : idx) {
        sorted.steps.push_back(s.steps[i]);
        sorted.values.push_back(s.values[i]);
      }
      s = std::move(sorted);
    }
  }
  return sweep;
}

}  // namespace batchlab::analysis
