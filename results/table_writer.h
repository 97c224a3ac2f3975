// Writes the rows of a query in the output formats of `batchlab results`: an aligned text table
// for people, CSV and JSON / JSON Lines for pandas, DuckDB or a spreadsheet.
//
//   BATCHLAB_ASSIGN_OR_RETURN(auto format, ParseOutputFormat("csv", "--format", kListFormats));
//   BATCHLAB_ASSIGN_OR_RETURN(auto st, db->Prepare("SELECT * FROM run_summary"));
//   BATCHLAB_ASSIGN_OR_RETURN(int64_t rows, WriteRows(st, format, stdout));
//
// Table: NULL prints empty, numbers right-aligned, reals with 4 significant digits in one style
// per column (fixed, or scientific for the whole column when one of its values needs it; a
// column of both signs, differences such as a loss gap, fixed at the decimals of its largest),
// `*_at` columns as UTC times.
// CSV: RFC 4180 quoting, a header row, reals in shortest round-trip form, NULL empty.
// JSON: an array of objects (one per line); JSONL: one object per line; NULL is null.
// The table format holds all rows to align them; the others stream.
//
// The same writer renders rows already held as text (the analysis tables):
//   fmt::print("{}", FormatRows({"batch_size", "steps"}, {{"256", "912.5"}},
//   OutputFormat::kTable));
#ifndef BATCHLAB_RESULTS_TABLE_WRITER_H_
#define BATCHLAB_RESULTS_TABLE_WRITER_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "results/database.h"
#include "results/number_format.h"  // the cells FormatRows reads and rounds

namespace batchlab::results {

enum class OutputFormat { kTable, kCsv, kJson, kJsonl };

// Parses `name` for the option `flag`; only the formats in `allowed` are accepted, and an
// error names the flag and lists them.
StatusOr<OutputFormat> ParseOutputFormat(std::string_view name, std::string_view flag,
                                         const std::vector<OutputFormat>& allowed);
const char* OutputFormatName(OutputFormat f);

// Steps `st` to its end, writing the header and every row to `out`. Returns the row count.
StatusOr<int64_t> WriteRows(Statement& st, OutputFormat format, std::FILE* out);

// `rows` of text cells ("" = no value) in `format`. A column whose non-empty cells all read as
// numbers is numeric: right-aligned (a trailing % allowed), its reals in one style (4
// significant digits, percents 3), and JSON numbers rather than strings. Cells should hold exact
// numbers (ExactNumber): CSV and JSON write them as they are, so an integer stays exact
// (10752, never 1.075e+04); a column of percents ("7.66%") becomes plain numbers in a column
// named `<name>_percent`.
std::string FormatRows(const std::vector<std::string>& columns,
                       const std::vector<std::vector<std::string>>& rows, OutputFormat format);

// The cells of `rows` as the table format shows them (rounded, one style per column), for
// renderings that lay the table out themselves (Markdown, HTML).
std::vector<std::vector<std::string>> DisplayRows(
    const std::vector<std::string>& columns, const std::vector<std::vector<std::string>>& rows);

}  // namespace batchlab::results

#endif  // BATCHLAB_RESULTS_TABLE_WRITER_H_
