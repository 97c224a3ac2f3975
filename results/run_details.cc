// One run, in full, for `results show`; see run_details.h.
#include "results/run_details.h"

#include <sqlite3.h>

#include <ctime>
#include <string>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "results/run_query.h"
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
      return fmt::format("{}", st.ColumnDouble(c));
    default:
      return st.ColumnText(c);
  }
}

Status WriteSummary(Database& db, const std::string& run_id, std::FILE* out) {
  BATCHLAB_ASSIGN_OR_RETURN(Statement st, db.Prepare("SELECT * FROM run_summary WHERE run_id = ?"));
  st.BindText(1, run_id);
  BATCHLAB_ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return NotFoundError(fmt::format("no run '{}'", run_id));
  fmt::print(out, "run {}\n", run_id);
  for (int c = 0; c < st.ColumnCount(); ++c) {
    const std::string name = st.ColumnName(c);
    if (name == "run_id" || name == "run_key" || name == "sweep_id") continue;
    std::string value = CellText(st, c);
    if ((name == "started_at" || name == "ended_at") && !st.ColumnIsNull(c)) {
      value = UtcTime(st.ColumnDouble(c));
    }
    fmt::print(out, "  {:<20} {}\n", name, value);
  }
  return OkStatus();
}

Status WriteMetricsDigest(Database& db, const std::string& run_id, std::FILE* out) {
  BATCHLAB_ASSIGN_OR_RETURN(
      Statement st,
      db.Prepare("SELECT name, count(*), min(value), max(value), "
                 "(SELECT value FROM run_metrics l WHERE l.run_id = m.run_id AND l.name = m.name "
                 " ORDER BY seq DESC LIMIT 1) "
                 "FROM run_metrics m WHERE run_id = ? GROUP BY name ORDER BY name"));
  st.BindText(1, run_id);
  bool any = false;
  while (true) {
    BATCHLAB_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    if (!any) {
      fmt::print(out, "\nmetrics (current attempt)\n  {:<20} {:>8} {:>12} {:>12} {:>12}\n", "name",
                 "values", "min", "max", "last");
      any = true;
    }
    fmt::print(out, "  {:<20} {:>8} {:>12.6g} {:>12.6g} {:>12.6g}\n", st.ColumnText(0),
               st.ColumnInt(1), st.ColumnDouble(2), st.ColumnDouble(3), st.ColumnDouble(4));
  }
  if (!any) fmt::print(out, "\nmetrics (current attempt): none yet\n");
  return OkStatus();
}

Status WriteEvents(Database& db, const std::string& run_id, std::FILE* out) {
  BATCHLAB_ASSIGN_OR_RETURN(
      Statement st,
      db.Prepare("SELECT e.time, e.attempt, e.kind, e.from_state, e.to_state, e.message "
                 "FROM events e JOIN runs r ON r.run_key = e.run_key WHERE r.id = ? "
                 "ORDER BY e.id"));
  st.BindText(1, run_id);
  fmt::print(out, "\nevents\n");
  bool any = false;
  while (true) {
    BATCHLAB_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    any = true;
    std::string what = st.ColumnText(2);
    if (!st.ColumnIsNull(3) || !st.ColumnIsNull(4)) {
      what += fmt::format(" {} -> {}", st.ColumnText(3), st.ColumnText(4));
    }
    const std::string message = st.ColumnText(5);
    fmt::print(out, "  {}  attempt {}  {}{}{}\n", UtcTime(st.ColumnDouble(0)), CellText(st, 1),
               what, message.empty() ? "" : ": ", message);
  }
  if (!any) fmt::print(out, "  none\n");
  return OkStatus();
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

Status WriteRunDetails(Database& db, const std::string& run_id_or_prefix, std::FILE* out) {
  BATCHLAB_ASSIGN_OR_RETURN(std::string run_id, ResolveRunId(db, run_id_or_prefix));
  BATCHLAB_RETURN_IF_ERROR(WriteSummary(db, run_id, out));
  BATCHLAB_RETURN_IF_ERROR(WriteMetricsDigest(db, run_id, out));
  BATCHLAB_RETURN_IF_ERROR(WriteEvents(db, run_id, out));
  return WriteConfig(db, run_id, out);
}

}  // namespace batchlab::results
