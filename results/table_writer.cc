// Table, CSV, JSON and JSON Lines output of query rows; see table_writer.h.
#include "results/table_writer.h"

#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <optional>
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

bool NeedsScientific(double v) {
  const double a = std::fabs(v);
  return std::isfinite(v) && v != 0 && (a < 1e-3 || a >= 1e7);
}

std::string FormatRealIn(double v, bool scientific, int significant) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (scientific && v != 0) return fmt::format("{:.{}e}", v, significant - 1);
  if (v == 0) return "0";
  const int exponent = static_cast<int>(std::floor(std::log10(std::fabs(v))));
  return fmt::format("{:.{}f}", v, std::max(0, significant - 1 - exponent));
}

// A cell of the table format: its text, or a real formatted once its column's style is known.
struct Cell {
  std::string text;
  bool is_real = false;
  double real = 0;
};

// One cell as a person reads it in the table format.
Cell TableCell(const Statement& st, int c, const std::string& column) {
  switch (st.ColumnType(c)) {
    case SQLITE_NULL:
      return {};
    case SQLITE_INTEGER:
      return {fmt::format("{}", st.ColumnInt(c))};
    case SQLITE_FLOAT:
      if (EndsWith(column, "_at")) return {UtcTime(st.ColumnDouble(c))};
      return {"", true, st.ColumnDouble(c)};
    default:
      return {st.ColumnText(c)};
  }
}

// A column of differences (values of both signs: a loss gap, an error) in fixed style at one
// absolute resolution, the decimals that give its largest magnitude 4 significant digits
// ("0.03993", "0.00048", "-0.02594"): a difference near zero is a small number, not a reason to
// put the column in e-notation. nullopt: the column is not one (one sign, or a value too large
// or non-finite), and is styled as any other.
std::optional<int> DifferenceDecimals(const std::vector<std::vector<Cell>>& rows, size_t c) {
  bool negative = false, positive = false;
  double largest = 0;
  for (const auto& r : rows) {
    if (!r[c].is_real) continue;
    const double v = r[c].real;
    if (!std::isfinite(v) || std::fabs(v) >= 1e7) return std::nullopt;
    negative = negative || v < 0;
    positive = positive || v > 0;
    largest = std::max(largest, std::fabs(v));
  }
  if (!negative || !positive) return std::nullopt;
  return std::max(0, 3 - static_cast<int>(std::floor(std::log10(largest))));
}

// Aligned text: a header, a rule, the rows; numeric columns right-aligned, each column's reals
// in one style (scientific for all when one of them needs it; a column of differences fixed).
// Formats each column's reals with 4 significant digits, in one style per column.
void StyleReals(std::vector<std::vector<Cell>>& rows, size_t n) {
  for (size_t c = 0; c < n; ++c) {
    if (const std::optional<int> decimals = DifferenceDecimals(rows, c)) {
      for (auto& r : rows) {
        if (!r[c].is_real) continue;
        r[c].text = r[c].real == 0 ? "0" : fmt::format("{:.{}f}", r[c].real, *decimals);
      }
      continue;
    }
    bool scientific = false;
    for (const auto& r : rows)
      scientific = scientific || (r[c].is_real && NeedsScientific(r[c].real));
    for (auto& r : rows) {
      if (r[c].is_real) r[c].text = FormatRealIn(r[c].real, scientific, 4);
    }
  }
}

void AppendAligned(fmt::memory_buffer& buf, const std::vector<std::string>& columns,
                   std::vector<std::vector<Cell>>& rows, const std::vector<bool>& numeric) {
  const size_t n = columns.size();
  StyleReals(rows, n);
  std::vector<size_t> width(n);
  for (size_t c = 0; c < n; ++c) {
    width[c] = columns[c].size();
    for (const auto& r : rows) width[c] = std::max(width[c], r[c].text.size());
  }
  auto line = [&](auto text_of) {
    for (size_t c = 0; c < n; ++c) {
      if (c > 0) buf.append(std::string_view("  "));
      const std::string& t = text_of(c);
      if (numeric[c]) {
        fmt::format_to(std::back_inserter(buf), "{:>{}}", t, width[c]);
      } else if (c + 1 < n) {
        fmt::format_to(std::back_inserter(buf), "{:<{}}", t, width[c]);
      } else {
        buf.append(t);
      }
    }
    buf.push_back('\n');
  };
  line([&](size_t c) -> const std::string& { return columns[c]; });
  std::vector<std::string> rule(n);
  for (size_t c = 0; c < n; ++c) rule[c] = std::string(width[c], '-');
  line([&](size_t c) -> const std::string& { return rule[c]; });
  for (const auto& r : rows) line([&](size_t c) -> const std::string& { return r[c].text; });
}

// What a text cell holds, for FormatRows.
enum class TextKind { kEmpty, kInteger, kReal, kPercent, kText };

TextKind KindOf(const std::string& s) {
  if (s.empty()) return TextKind::kEmpty;
  if (s == "inf" || s == "-inf" || s == "nan") return TextKind::kReal;
  std::string_view v(s);
  const bool percent = v.back() == '%';
  if (percent) v.remove_suffix(1);
  if (v.empty()) return TextKind::kText;
  const size_t digits = v.find_first_not_of("0123456789", v.front() == '-' ? 1 : 0);
  if (digits == std::string_view::npos && v.size() > (v.front() == '-' ? 1u : 0u)) {
    return percent ? TextKind::kPercent : TextKind::kInteger;
  }
  // A real has a '.' or a signed exponent (so hex run ids like 123e4567 stay text).
  const bool real_like = v.find('.') != std::string_view::npos ||
                         v.find("e+") != std::string_view::npos ||
                         v.find("e-") != std::string_view::npos;
  const std::string copy(v);
  char* end = nullptr;
  std::strtod(copy.c_str(), &end);
  if (!real_like || end != copy.c_str() + copy.size()) return TextKind::kText;
  return percent ? TextKind::kPercent : TextKind::kReal;
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

namespace {

// The kind of every cell, and per column whether all its cells are numbers (empty ones aside)
// and whether they are all percents.
struct RowKinds {
  std::vector<std::vector<TextKind>> kinds;
  std::vector<bool> numeric, percent;
};

RowKinds KindsOf(size_t n, const std::vector<std::vector<std::string>>& rows) {
  RowKinds k{std::vector<std::vector<TextKind>>(rows.size(), std::vector<TextKind>(n)),
             std::vector<bool>(n, true), std::vector<bool>(n, false)};
  std::vector<bool> any_percent(n, false), any_plain(n, false);
  for (size_t i = 0; i < rows.size(); ++i) {
    for (size_t c = 0; c < n; ++c) {
      const TextKind kind = KindOf(c < rows[i].size() ? rows[i][c] : "");
      k.kinds[i][c] = kind;
      if (kind == TextKind::kText) k.numeric[c] = false;
      if (kind == TextKind::kPercent) any_percent[c] = true;
      if (kind == TextKind::kInteger || kind == TextKind::kReal) any_plain[c] = true;
    }
  }
  for (size_t c = 0; c < n; ++c) k.percent[c] = k.numeric[c] && any_percent[c] && !any_plain[c];
  return k;
}

// The cells as a person reads them: reals with 4 significant digits in one style per numeric
// column, percents with 3, integers and text as they are.
std::vector<std::vector<Cell>> DisplayCells(size_t n,
                                            const std::vector<std::vector<std::string>>& rows,
                                            const RowKinds& k) {
  std::vector<std::vector<Cell>> cells(rows.size(), std::vector<Cell>(n));
  for (size_t i = 0; i < rows.size(); ++i) {
    for (size_t c = 0; c < n; ++c) {
      Cell& cell = cells[i][c];
      cell.text = c < rows[i].size() ? rows[i][c] : "";
      if (!k.numeric[c]) continue;
      if (k.kinds[i][c] == TextKind::kReal) {
        cell.is_real = true;
        cell.real = std::strtod(cell.text.c_str(), nullptr);
      } else if (k.kinds[i][c] == TextKind::kPercent) {
        cell.text = FormatNumber(std::strtod(cell.text.c_str(), nullptr), 3) + "%";
      }
    }
  }
  StyleReals(cells, n);
  return cells;
}

}  // namespace

std::vector<std::vector<std::string>> DisplayRows(
    const std::vector<std::string>& columns, const std::vector<std::vector<std::string>>& rows) {
  const size_t n = columns.size();
  std::vector<std::vector<std::string>> out;
  for (auto& r : DisplayCells(n, rows, KindsOf(n, rows))) {
    std::vector<std::string> texts;
    for (auto& cell : r) texts.push_back(std::move(cell.text));
    out.push_back(std::move(texts));
  }
  return out;
}

std::string FormatRows(const std::vector<std::string>& columns,
                       const std::vector<std::vector<std::string>>& rows, OutputFormat format) {
  const size_t n = columns.size();
  const RowKinds k = KindsOf(n, rows);
  auto text = [&](size_t i, size_t c) -> std::string {
    std::string t = c < rows[i].size() ? rows[i][c] : "";
    if (k.percent[c] && !t.empty()) t.pop_back();  // the number, its unit in the column name
    return t;
  };
  // A column of percents is named for its unit in CSV and JSON, whose cells are plain numbers.
  auto name = [&](size_t c) { return k.percent[c] ? columns[c] + "_percent" : columns[c]; };
  fmt::memory_buffer buf;
  if (format == OutputFormat::kTable) {
    std::vector<std::vector<Cell>> cells = DisplayCells(n, rows, k);
    AppendAligned(buf, columns, cells, k.numeric);
  } else if (format == OutputFormat::kCsv) {
    for (size_t c = 0; c < n; ++c) {
      if (c > 0) buf.push_back(',');
      AppendCsvField(buf, name(c));
    }
    buf.push_back('\n');
    for (size_t i = 0; i < rows.size(); ++i) {
      for (size_t c = 0; c < n; ++c) {
        if (c > 0) buf.push_back(',');
        AppendCsvField(buf, text(i, c));
      }
      buf.push_back('\n');
    }
  } else {
    if (format == OutputFormat::kJson) buf.push_back('[');
    for (size_t i = 0; i < rows.size(); ++i) {
      if (format == OutputFormat::kJson) buf.append(std::string_view(i == 0 ? "\n  " : ",\n  "));
      nlohmann::ordered_json o = nlohmann::ordered_json::object();
      for (size_t c = 0; c < n; ++c) {
        const std::string t = text(i, c);
        const TextKind kind = k.kinds[i][c];
        if (kind == TextKind::kEmpty) {
          o[name(c)] = nullptr;
        } else if (kind == TextKind::kInteger) {
          o[name(c)] = std::strtoll(t.c_str(), nullptr, 10);
        } else if (kind == TextKind::kReal || (kind == TextKind::kPercent && k.percent[c])) {
          const double d = std::strtod(t.c_str(), nullptr);
          o[name(c)] = std::isfinite(d) ? nlohmann::ordered_json(d) : nullptr;
        } else {
          o[name(c)] = t;
        }
      }
      buf.append(o.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      if (format == OutputFormat::kJsonl) buf.push_back('\n');
    }
    if (format == OutputFormat::kJson) buf.append(std::string_view(rows.empty() ? "]\n" : "\n]\n"));
  }
  return fmt::to_string(buf);
}

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
    std::vector<std::vector<Cell>> cells;
    std::vector<bool> numeric(n, true);
    for (int c = 0; c < n; ++c) numeric[c] = !EndsWith(columns[c], "_at");
    while (true) {
      BATCHLAB_ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      std::vector<Cell> r(n);
      for (int c = 0; c < n; ++c) {
        const int type = st.ColumnType(c);
        if (type == SQLITE_TEXT || type == SQLITE_BLOB) numeric[c] = false;
        r[c] = TableCell(st, c, columns[c]);
      }
      cells.push_back(std::move(r));
    }
    AppendAligned(buf, columns, cells, numeric);
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
