// Table rendering (see table.h).
#include "analysis/data/table.h"

#include <algorithm>
#include <cmath>

#include <fmt/core.h>

#include "results/table_writer.h"

namespace batchlab::analysis {

std::string HtmlEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string Table::ToText() const {
  std::string out =
      title + "\n" + results::FormatRows(columns, rows, results::OutputFormat::kTable);
  if (rows.empty()) out += "(no rows)\n";
  for (const std::string& n : notes) out += n + "\n";
  return out;
}

std::string Table::ToMarkdown() const {
  auto cell = [](std::string s) {
    std::string out;
    for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
    return out;
  };
  std::string out = "### " + title + "\n\n";
  if (!rows.empty()) {
    out += "|";
    for (const auto& c : columns) out += " " + cell(c) + " |";
    out += "\n|";
    for (size_t c = 0; c < columns.size(); ++c) out += " --- |";
    out += "\n";
    for (const auto& row : results::DisplayRows(columns, rows)) {
      out += "|";
      for (size_t c = 0; c < columns.size(); ++c) {
        out += " " + cell(c < row.size() ? row[c] : "") + " |";
      }
      out += "\n";
    }
  } else {
    out += "(no rows)\n";
  }
  for (const std::string& n : notes) out += "\n" + n + "\n";
  return out + "\n";
}

std::string Table::ToHtml() const {
  std::string out = "<h3>" + HtmlEscape(title) + "</h3>\n";
  if (!rows.empty()) {
    // One line per cell (a long configuration used to wrap to five): a wide table scrolls.
    out += "<div class=\"table\"><table>\n<thead><tr>";
    for (const auto& c : columns) out += "<th>" + HtmlEscape(c) + "</th>";
    out += "</tr></thead>\n<tbody>\n";
    for (const auto& row : results::DisplayRows(columns, rows)) {
      out += "<tr>";
      for (size_t c = 0; c < columns.size(); ++c) {
        out += "<td>" + HtmlEscape(c < row.size() ? row[c] : "") + "</td>";
      }
      out += "</tr>\n";
    }
    out += "</tbody>\n</table></div>\n";
  } else {
    out += "<p>(no rows)</p>\n";
  }
  for (const std::string& n : notes) out += "<p>" + HtmlEscape(n) + "</p>\n";
  return out;
}

std::string Table::ToCsv() const {
  return results::FormatRows(columns, rows, results::OutputFormat::kCsv);
}

std::string Table::ToJson() const {
  return results::FormatRows(columns, rows, results::OutputFormat::kJson);
}

}  // namespace batchlab::analysis
