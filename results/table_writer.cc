// Table, CSV, JSON and JSON Lines output of query rows; see table_writer.h.
#include "results/table_writer.h"

#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <string>

#include <fmt/core.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace batchlab::results {
namespace {

constexpr std::pair<OutputFormat, const char*> kNames[] = {
    {OutputFormat::kTable, "table"},
    {OutputFormat::kCsv, "csv"},
    {OutputFormat::kJson, "json"},
    {OutputFormat::kJsonl, "jsonl"},
};

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix.data(), suffix.size()) == 0;
}

std::string UtcTime(double unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string HumanReal(double x) {
  const double a = std::fabs(x);
  if (x == 0) return "0";
  if (a >= 1e7 || a < 1e-3) return fmt::format("{:.3e}", x);
  if (a >= 100) return fmt::format("{:.1f}", x);
  return fmt::format("{:.4f}", x);
}

// One cell as a person reads it in the table format.
std::string TableCell(const Statement& st, int c, const std::string& column) {
  switch (st.ColumnType(c)) {
    case SQLITE_NULL:
      return "";
    case SQLITE_INTEGER:
      return fmt::format("{}", st.ColumnInt(c));
    case SQLITE_FLOAT:
      return EndsWith(column, "_at") ? UtcTime(st.ColumnDouble(c)) : HumanReal(st.ColumnDouble(c));
    default:
      return st.ColumnText(c);
  }
}

void AppendCsvField(fmt::memory_buffer& buf, std::string_view s) {
  if (s.find_first_of(",\"\n\r") == std::string_view::npos) {
    buf.append(s.data(), s.data() + s.size());
    return;
  }
  buf.push_back('"');
  for (char ch : s) {
    if (ch == '"') buf.push_back('"');
    buf.push_back(ch);
  }
  buf.push_back('"');
}

void AppendCsvCell(fmt::memory_buffer& buf, const Statement& st, int c) {
  switch (st.ColumnType(c)) {
    case SQLITE_NULL:
      return;
    case SQLITE_INTEGER:
      fmt::format_to(std::back_inserter(buf), "{}", st.ColumnInt(c));
      return;
    case SQLITE_FLOAT:
      fmt::format_to(std::back_inserter(buf), "{}", st.ColumnDouble(c));
      return;
    default:
      AppendCsvField(buf, st.ColumnText(c));
  }
}

// One cell as JSON text: null, an integer, a finite number (shortest round-trip form; NaN and
// infinities become null), or an escaped string.
void AppendJsonCell(fmt::memory_buffer& buf, const Statement& st, int c) {
  switch (st.ColumnType(c)) {
    case SQLITE_NULL:
      buf.append(std::string_view("null"));
      return;
    case SQLITE_INTEGER:
      fmt::format_to(std::back_inserter(buf), "{}", st.ColumnInt(c));
      return;
    case SQLITE_FLOAT: {
      const double d = st.ColumnDouble(c);
      if (std::isfinite(d)) {
        fmt::format_to(std::back_inserter(buf), "{}", d);
      } else {
        buf.append(std::string_view("null"));
      }
      return;
    }
    default: {
      const std::string text = nlohmann::json(st.ColumnText(c))
                                   .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      buf.append(text);
    }
  }
}

// An object with the query's columns in order.
void AppendJsonRow(fmt::memory_buffer& buf, const Statement& st,
                   const std::vector<std::string>& keys) {
  buf.push_back('{');
  for (size_t c = 0; c < keys.size(); ++c) {
    if (c > 0) buf.push_back(',');
    buf.append(keys[c]);
    buf.push_back(':');
    AppendJsonCell(buf, st, static_cast<int>(c));
  }
  buf.push_back('}');
}

void Flush(fmt::memory_buffer& buf, std::FILE* out) {
  std::fwrite(buf.data(), 1, buf.size(), out);
  buf.clear();
}

}  // namespace

const char* OutputFormatName(OutputFormat f) {
  for (const auto& [format, name] : kNames) {
    if (format == f) return name;
  }
  return "?";
}

StatusOr<OutputFormat> ParseOutputFormat(std::string_view name, std::string_view flag,
                                         const std::vector<OutputFormat>& allowed) {
  std::vector<std::string> valid;
  for (OutputFormat f : allowed) {
    valid.emplace_back(OutputFormatName(f));
    if (name == OutputFormatName(f)) return f;
  }
  return InvalidArgumentError(fmt::format("{} '{}': unknown format; valid formats: {}", flag, name,
                                          fmt::join(valid, ", ")));
}

StatusOr<int64_t> WriteRows(Statement& st, OutputFormat format, std::FILE* out) {
  std::vector<std::string> columns, json_keys;
  for (int c = 0; c < st.ColumnCount(); ++c) {
    columns.push_back(st.ColumnName(c));
    json_keys.push_back(nlohmann::json(columns.back()).dump());
  }
  const int n = static_cast<int>(columns.size());
  fmt::memory_buffer buf;
  int64_t rows = 0;

  if (format == OutputFormat::kTable) {
    std::vector<std::vector<std::string>> cells;
    std::vector<bool> numeric(n, true);
    std::vector<size_t> width(n);
    for (int c = 0; c < n; ++c) width[c] = columns[c].size();
    while (true) {
      BATCHLAB_ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      std::vector<std::string> r(n);
      for (int c = 0; c < n; ++c) {
        const int type = st.ColumnType(c);
        if (type == SQLITE_TEXT || type == SQLITE_BLOB) numeric[c] = false;
        r[c] = TableCell(st, c, columns[c]);
        if (EndsWith(columns[c], "_at")) numeric[c] = false;
        width[c] = std::max(width[c], r[c].size());
      }
      cells.push_back(std::move(r));
    }
    auto line = [&](const std::vector<std::string>& r) {
      for (int c = 0; c < n; ++c) {
        if (c > 0) buf.append(std::string_view("  "));
        if (numeric[c]) {
          fmt::format_to(std::back_inserter(buf), "{:>{}}", r[c], width[c]);
        } else if (c + 1 < n) {
          fmt::format_to(std::back_inserter(buf), "{:<{}}", r[c], width[c]);
        } else {
          buf.append(r[c]);
        }
      }
      buf.push_back('\n');
    };
    line(columns);
    std::vector<std::string> rule(n);
    for (int c = 0; c < n; ++c) rule[c] = std::string(width[c], '-');
    line(rule);
    for (const auto& r : cells) line(r);
    Flush(buf, out);
    return static_cast<int64_t>(cells.size());
  }

  if (format == OutputFormat::kCsv) {
    for (int c = 0; c < n; ++c) {
      if (c > 0) buf.push_back(',');
      AppendCsvField(buf, columns[c]);
    }
    buf.push_back('\n');
  } else if (format == OutputFormat::kJson) {
    buf.push_back('[');
  }
  while (true) {
    BATCHLAB_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    if (format == OutputFormat::kCsv) {
      for (int c = 0; c < n; ++c) {
        if (c > 0) buf.push_back(',');
        AppendCsvCell(buf, st, c);
      }
      buf.push_back('\n');
    } else {
      if (format == OutputFormat::kJson) buf.append(std::string_view(rows == 0 ? "\n  " : ",\n  "));
      AppendJsonRow(buf, st, json_keys);
      if (format == OutputFormat::kJsonl) buf.push_back('\n');
    }
    ++rows;
    if (buf.size() > (1 << 16)) Flush(buf, out);
  }
  if (format == OutputFormat::kJson) buf.append(std::string_view(rows == 0 ? "]\n" : "\n]\n"));
  Flush(buf, out);
  return rows;
}

}  // namespace batchlab::results
