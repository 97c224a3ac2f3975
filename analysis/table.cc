// Table rendering (see table.h).
#include "analysis/table.h"

#include <algorithm>
#include <cmath>

#include <fmt/core.h>

namespace batchlab::analysis {

std::string FormatNumber(double v, int significant) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.{}g}", v, significant);
}

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
  std::vector<size_t> width(columns.size(), 0);
  for (size_t c = 0; c < columns.size(); ++c) width[c] = columns[c].size();
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size() && c < width.size(); ++c) {
      width[c] = std::max(width[c], row[c].size());
    }
  }
  std::string out = title + "\n";
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l;
    for (size_t c = 0; c < width.size(); ++c) {
      const std::string cell = c < cells.size() ? cells[c] : "";
      l += fmt::format("{:<{}}", cell, width[c]);
      if (c + 1 < width.size()) l += "  ";
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    return l + "\n";
  };
  out += line(columns);
  std::vector<std::string> rule;
  for (size_t w : width) rule.push_back(std::string(w, '-'));
  out += line(rule);
  for (const auto& row : rows) out += line(row);
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
    for (const auto& row : rows) {
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
    out += "<table>\n<thead><tr>";
    for (const auto& c : columns) out += "<th>" + HtmlEscape(c) + "</th>";
    out += "</tr></thead>\n<tbody>\n";
    for (const auto& row : rows) {
      out += "<tr>";
      for (size_t c = 0; c < columns.size(); ++c) {
        out += "<td>" + HtmlEscape(c < row.size() ? row[c] : "") + "</td>";
      }
      out += "</tr>\n";
    }
    out += "</tbody>\n</table>\n";
  } else {
    out += "<p>(no rows)</p>\n";
  }
  for (const std::string& n : notes) out += "<p>" + HtmlEscape(n) + "</p>\n";
  return out;
}

std::string Table::ToCsv() const {
  auto field = [](const std::string& s) {
    if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
    std::string out = "\"";
    for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
  };
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l;
    for (size_t c = 0; c < columns.size(); ++c) {
      if (c) l += ',';
      l += field(c < cells.size() ? cells[c] : "");
    }
    return l + "\r\n";
  };
  std::string out = line(columns);
  for (const auto& row : rows) out += line(row);
  return out;
}

}  // namespace batchlab::analysis
