// One run, in full, for `results show`; see run_details.h.
#include "results/run_details.h"

#include <sqlite3.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "results/run_query.h"
#include "results/table_writer.h"
#include "results/where_clause.h"

namespace batchlab::results {
namespace {

std::string UtcTime(double unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::string CellText(const Statement& st, int c) {
  switch (st.ColumnType(c)) {
    case SQLITE_NULL:
      return "-";
    case SQLITE_INTEGER:
      return fmt::format("{}", st.ColumnInt(c));
    case SQLITE_FLOAT:
      return FormatNumber(st.ColumnDouble(c), 6);
    default:
      return st.ColumnText(c);
  }
}

// What a summary field measures, where two figures could be confused: the time figures.
std::string FieldMeaning(const std::string& field) {
  if (field == "seconds") return "wall clock, the run's start to its end (evaluations included)";
  if (field == "target_seconds") {
    return "wall clock, the run's start to the evaluation that met the target (evaluations and "
           "start-up included); `analyze target` reports train_seconds: training steps only";
  }
  return "";
}

Status WriteSummary(Database& db, const std::string& run_id, std::FILE* out) {
  BATCHLAB_ASSIGN_OR_RETURN(Statement st, db.Prepare("SELECT * FROM run_summary WHERE run_id = ?"));
  st.BindText(1, run_id);
  BATCHLAB_ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return NotFoundError(fmt::format("no run '{}'", run_id));
  fmt::print(out, "run {}\n", run_id);
  std::vector<std::vector<std::string>> rows;  // field, value: through the one table writer
  for (int c = 0; c < st.ColumnCount(); ++c) {
    const std::string name = st.ColumnName(c);
    if (name == "run_id" || name == "run_key" || name == "sweep_id") continue;
    std::string value = CellText(st, c);
    if ((name == "started_at" || name == "ended_at") && !st.ColumnIsNull(c)) {
      value = UtcTime(st.ColumnDouble(c));
    }
    rows.push_back({name, value, FieldMeaning(name)});
  }
  fmt::print(out, "{}", FormatRows({"field", "value", "meaning"}, rows, OutputFormat::kTable));
  return OkStatus();
}

constexpr const char* kMetricsSql =
    "SELECT name, count(*) AS \"values\", min(value) AS min, max(value) AS max, "
    "(SELECT value FROM run_metrics l WHERE l.run_id = m.run_id AND l.name = m.name "
    " ORDER BY seq DESC LIMIT 1) AS last "
    "FROM run_metrics m WHERE run_id = ? GROUP BY name ORDER BY name";
constexpr const char* kEventsSql =
    "SELECT e.time AS event_at, e.attempt, e.kind, e.from_state, e.to_state, e.message "
    "FROM events e JOIN runs r ON r.run_key = e.run_key WHERE r.id = ? ORDER BY e.id";

// The checkpoints the run's lines record (the current attempt's, with the history it resumed
// from; `keep` may have removed the older files since).
constexpr const char* kCheckpointsSql =
    "SELECT step, max(CASE WHEN name = 'checkpoint_bytes' THEN value END) AS bytes, "
    "max(CASE WHEN name = 'checkpoint_seconds' THEN value END) AS write_seconds "
    "FROM run_metrics WHERE run_id = ? AND name IN ('checkpoint_bytes', 'checkpoint_seconds') "
    "GROUP BY seq ORDER BY seq";

// The rows of `sql` (one parameter: the run id) through the one table writer.
StatusOr<int64_t> WriteQuery(Database& db, const char* sql, const std::string& run_id,
                             OutputFormat format, std::FILE* out) {
  BATCHLAB_ASSIGN_OR_RETURN(Statement st, db.Prepare(sql));
  st.BindText(1, run_id);
  return WriteRows(st, format, out);
}

// The JSON array of the rows of `sql`, as the table writer writes it.
StatusOr<nlohmann::json> QueryJson(Database& db, const char* sql, const std::string& run_id) {
  char* data = nullptr;
  size_t size = 0;
  std::FILE* mem = open_memstream(&data, &size);
  if (mem == nullptr) return InternalError("out of memory");
  StatusOr<int64_t> rows = WriteQuery(db, sql, run_id, OutputFormat::kJson, mem);
  std::fclose(mem);
  std::string text(data, size);
  std::free(data);
  if (!rows.ok()) return rows.status();
  return nlohmann::json::parse(text);
}

Status WriteConfig(Database& db, const std::string& run_id, std::FILE* out) {
  BATCHLAB_ASSIGN_OR_RETURN(Statement st, db.Prepare("SELECT config_json FROM runs WHERE id = ?"));
  st.BindText(1, run_id);
  BATCHLAB_ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return OkStatus();
  const std::string text = st.ColumnText(0);
  nlohmann::json config = nlohmann::json::parse(text, nullptr, false);
  fmt::print(out, "\nconfig\n{}\n", config.is_discarded() ? text : config.dump(2));
  return OkStatus();
}

}  // namespace

Status WriteRunDetails(Database& db, const std::string& run_id_or_prefix, std::FILE* out,
                       OutputFormat format) {
  BATCHLAB_ASSIGN_OR_RETURN(std::string run_id, ResolveRunId(db, run_id_or_prefix));
  if (format == OutputFormat::kJson) {
    nlohmann::json j;
    BATCHLAB_ASSIGN_OR_RETURN(nlohmann::json summary,
                              QueryJson(db, "SELECT * FROM run_summary WHERE run_id = ?", run_id));
    j["run"] = summary.empty() ? nlohmann::json(nullptr) : summary.front();
    BATCHLAB_ASSIGN_OR_RETURN(j["metrics"], QueryJson(db, kMetricsSql, run_id));
    BATCHLAB_ASSIGN_OR_RETURN(j["events"], QueryJson(db, kEventsSql, run_id));
    BATCHLAB_ASSIGN_OR_RETURN(j["checkpoints"], QueryJson(db, kCheckpointsSql, run_id));
    BATCHLAB_ASSIGN_OR_RETURN(nlohmann::json config,
                              QueryJson(db, "SELECT config_json FROM runs WHERE id = ?", run_id));
    j["config"] = config.empty() ? nlohmann::json(nullptr)
                                 : nlohmann::json::parse(
                                       config.front().value("config_json", "null"), nullptr, false);
    fmt::print(out, "{}\n", j.dump(2));
    return OkStatus();
  }
  BATCHLAB_RETURN_IF_ERROR(WriteSummary(db, run_id, out));
  fmt::print(out, "\nmetrics (current attempt)\n");
  BATCHLAB_RETURN_IF_ERROR(WriteQuery(db, kMetricsSql, run_id, OutputFormat::kTable, out).status());
  fmt::print(out, "\ncheckpoints (resumes are events below)\n");
  BATCHLAB_RETURN_IF_ERROR(
      WriteQuery(db, kCheckpointsSql, run_id, OutputFormat::kTable, out).status());
  fmt::print(out, "\nevents\n");
  BATCHLAB_RETURN_IF_ERROR(WriteQuery(db, kEventsSql, run_id, OutputFormat::kTable, out).status());
  return WriteConfig(db, run_id, out);
}

}  // namespace batchlab::results
