// A titled table of already-formatted cells, rendered as aligned text (CLI), Markdown, HTML or
// CSV (report). The analyses build Tables in their section files (gns_section.h, ...); nothing here
// knows what they hold.
//
//   Table t{"steps_to_target", "Steps to target", {"batch_size", "steps"}};
//   t.rows.push_back({"256", FormatNumber(912.5)});
//   t.notes.push_back("best over learning rates (Shallue et al. 2018)");
//   fmt::print("{}", t.ToText());
#ifndef BATCHLAB_ANALYSIS_DATA_TABLE_H_
#define BATCHLAB_ANALYSIS_DATA_TABLE_H_

#include <string>
#include <vector>

#include "results/number_format.h"
#include "results/table_writer.h"

namespace batchlab::analysis {

struct Table {
  std::string name;   // file stem of its CSV: "steps_to_target"
  std::string title;  // "Steps to target"
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> notes;  // sentences shown under the table (not in the CSV)

  // Text, CSV and JSON go through results/table_writer.h, the one writer of the CLI: numeric
  // columns right-aligned with one number style per column.
  std::string ToText() const;      // title, columns padded to width, notes after
  std::string ToMarkdown() const;  // "### title", a pipe table, notes as paragraphs
  std::string ToHtml() const;      // <h3>, <table>, <p> notes; text escaped
  std::string ToCsv() const;       // RFC 4180: header + rows, quoted where needed
  std::string ToJson() const;      // an array of objects; numeric cells as numbers
};

// The number formats (results/number_format.h): ExactNumber, exact, in a table cell that the
// table views round and CSV keeps (ExactCell: or empty; IntegerCell; PercentCell); FormatNumber,
// `significant` digits; ProseNumber, 3 digits, in sentences and chart labels (ProsePercent;
// WholePercent).
using results::ExactCell;
using results::ExactNumber;
using results::FormatNumber;
using results::IntegerCell;
using results::PercentCell;
using results::ProseNumber;
using results::ProsePercent;
using results::WholePercent;

// Escapes & < > " for HTML text and attributes.
std::string HtmlEscape(const std::string& s);

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_DATA_TABLE_H_
