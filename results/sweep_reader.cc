// Reading one sweep version for the analysis; see sweep_reader.h.
#include "results/sweep_reader.h"

#include <sqlite3.h>

#include <algorithm>
#include <thread>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "results/run_query.h"
#include "results/schema.h"

namespace batchlab::results {
namespace {

// Memory-mapped reads save a copy per page on the large metrics scan (read-only: harmless); a
// read transaction gives every query the same snapshot while a sweep is writing.
Status BeginSnapshot(Database& db) {
  BATCHLAB_RETURN_IF_ERROR(db.Exec("PRAGMA mmap_size = 1073741824"));
  return db.Exec("BEGIN");
}

// The text of a run_params value as JSON: integers and reals as numbers, text quoted.
std::string ParamText(const Statement& st, int col) {
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

// The hot loop: the raw statement (no per-row Status or string), rows handed over in batches.
Status ScanPart(Database& db, int64_t sweep_id, const std::string& ids, int parts, int part,
                const MetricRowsVisitor& visit) {
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
  constexpr size_t kBatch = 4096;
  std::vector<MetricRow> batch(kBatch);
  size_t n = 0;
  int rc;
  while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
    MetricRow& row = batch[n++];
    row.run_key = sqlite3_column_int64(st.get(), 0);
    row.name_id = sqlite3_column_int64(st.get(), 1);
    row.step = sqlite3_column_int64(st.get(), 2);  // NULL reads as 0
    row.value = sqlite3_column_double(st.get(), 3);
    if (n == kBatch) {
      visit(part, batch.data(), n);
      n = 0;
    }
  }
  BATCHLAB_SQLITE_CHECK(h, rc, "scanning the metrics of the sweep");
  if (n > 0) visit(part, batch.data(), n);
  return OkStatus();
}

}  // namespace

StatusOr<std::unique_ptr<SweepReader>> SweepReader::Open(const std::string& db_path,
                                                         const std::string& name, int version) {
  BATCHLAB_ASSIGN_OR_RETURN(std::unique_ptr<Database> db, OpenReadOnly(db_path));
  std::unique_ptr<SweepReader> reader(new SweepReader(std::move(db), db_path));
  BATCHLAB_RETURN_IF_ERROR(BeginSnapshot(*reader->db_));
  BATCHLAB_ASSIGN_OR_RETURN(
      SweepVersion found,
      ResolveSweep(*reader->db_, name, version > 0 ? std::optional<int>(version) : std::nullopt));
  reader->sweep_id_ = found.id;
  reader->version_ = found.version;
  return reader;
}

SweepReader::~SweepReader() {
  if (db_ != nullptr) db_->Exec("COMMIT").IgnoreError();
}

StatusOr<std::string> SweepReader::SpecJson() {
  BATCHLAB_ASSIGN_OR_RETURN(Statement st, db_->Prepare("SELECT spec_json FROM sweeps WHERE id = ?1"));
  st.BindInt(1, sweep_id_);
  BATCHLAB_ASSIGN_OR_RETURN(bool row, st.Step());
  return row ? st.ColumnText(0) : std::string();
}

StatusOr<std::vector<SweepRunRow>> SweepReader::Runs() {
  BATCHLAB_ASSIGN_OR_RETURN(
      Statement st,
      db_->Prepare("SELECT s.run_key, s.run_id, s.state, s.batch_size, s.nodes, s.world_size, "
                   "s.local_batch_size, s.seed, s.optimizer, s.lr_rule, r.config_json, "
                   "s.parameters, s.tokens_per_step, s.flops_per_step, s.host, s.started_at, "
                   "s.ended_at, s.attempt "
                   "FROM run_summary s JOIN runs r ON r.run_key = s.run_key "
                   "WHERE s.sweep_id = ?1 ORDER BY s.ordinal"));
  st.BindInt(1, sweep_id_);
  std::vector<SweepRunRow> out;
  while (true) {
    BATCHLAB_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    SweepRunRow r;
    r.run_key = st.ColumnInt(0);
    r.run_id = st.ColumnText(1);
    r.state = st.ColumnText(2);
    r.batch_size = st.ColumnOptionalInt(3);
    r.nodes = st.ColumnOptionalInt(4);
    r.world_size = st.ColumnOptionalInt(5);
    r.local_batch_size = st.ColumnOptionalInt(6);
    r.seed = st.ColumnOptionalInt(7);
    r.optimizer = st.ColumnText(8);
    r.lr_rule = st.ColumnText(9);
    r.config_json = st.ColumnText(10);
    r.parameters = st.ColumnOptionalInt(11);
    r.tokens_per_step = st.ColumnOptionalInt(12);
    r.flops_per_step = st.ColumnOptionalDouble(13);
    r.host = st.ColumnText(14);
    r.started_at = st.ColumnOptionalDouble(15);
    r.ended_at = st.ColumnOptionalDouble(16);
    r.attempt = static_cast<int>(st.ColumnInt(17));
    out.push_back(std::move(r));
  }
  return out;
}

StatusOr<std::vector<SweepAttemptRow>> SweepReader::Attempts() {
  BATCHLAB_ASSIGN_OR_RETURN(
      Statement st,
      db_->Prepare("SELECT a.run_key, a.attempt, a.world_size, a.resumed_from, a.resumed_step "
                   "FROM attempts a JOIN runs r ON r.run_key = a.run_key WHERE r.sweep_id = ?1"));
  st.BindInt(1, sweep_id_);
  std::vector<SweepAttemptRow> out;
  while (true) {
    BATCHLAB_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    SweepAttemptRow a;
    a.run_key = st.ColumnInt(0);
    a.attempt = static_cast<int>(st.ColumnInt(1));
    a.world_size = st.ColumnOptionalInt(2);
    a.resumed_from = st.ColumnOptionalInt(3);
    a.resumed_step = st.ColumnOptionalInt(4);
    out.push_back(a);
  }
  return out;
}

StatusOr<std::vector<SweepParamRow>> SweepReader::Params() {
  BATCHLAB_ASSIGN_OR_RETURN(Statement st,
                            db_->Prepare("SELECT p.run_key, p.name, p.value FROM run_params p "
                                         "JOIN runs r ON r.run_key = p.run_key "
                                         "WHERE r.sweep_id = ?1"));
  st.BindInt(1, sweep_id_);
  std::vector<SweepParamRow> out;
  while (true) {
    BATCHLAB_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.push_back({st.ColumnInt(0), st.ColumnText(1), ParamText(st, 2)});
  }
  return out;
}

StatusOr<std::unordered_map<int64_t, std::string>> SweepReader::MetricNames(
    const std::vector<std::string>& wanted) {
  BATCHLAB_ASSIGN_OR_RETURN(Statement st, db_->Prepare("SELECT id, name FROM metric_names"));
  std::unordered_map<int64_t, std::string> names;
  while (true) {
    BATCHLAB_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    std::string n = st.ColumnText(1);
    if (wanted.empty() || std::find(wanted.begin(), wanted.end(), n) != wanted.end()) {
      names[st.ColumnInt(0)] = std::move(n);
    }
  }
  return names;
}

Status SweepReader::ScanMetrics(const std::unordered_map<int64_t, std::string>& names, int parts,
                                const MetricRowsVisitor& visit) {
  if (names.empty()) return OkStatus();
  parts = std::max(1, parts);
  std::string ids;
  for (const auto& [id, n] : names) ids += (ids.empty() ? "" : ",") + std::to_string(id);
  std::vector<Status> status(static_cast<size_t>(parts));
  std::vector<std::thread> pool;
  for (int part = 1; part < parts; ++part) {
    pool.emplace_back([&, part] {
      StatusOr<std::unique_ptr<Database>> conn = OpenReadOnly(path_);
      Status st = conn.status();
      if (st.ok()) st = BeginSnapshot(**conn);
      if (st.ok()) st = ScanPart(**conn, sweep_id_, ids, parts, part, visit);
      status[static_cast<size_t>(part)] = st;
    });
  }
  status[0] = ScanPart(*db_, sweep_id_, ids, parts, 0, visit);
  for (std::thread& t : pool) t.join();
  for (const Status& st : status) BATCHLAB_RETURN_IF_ERROR(st);
  return OkStatus();
}

}  // namespace batchlab::results
