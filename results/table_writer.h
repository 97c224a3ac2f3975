// Writes the rows of a query in the output formats of `batchlab results`: an aligned text table
// for people, CSV and JSON / JSON Lines for pandas, DuckDB or a spreadsheet.
//
//   BATCHLAB_ASSIGN_OR_RETURN(auto format, ParseOutputFormat("csv", "--format", kListFormats));
//   BATCHLAB_ASSIGN_OR_RETURN(auto st, db->Prepare("SELECT * FROM run_summary"));
//   BATCHLAB_ASSIGN_OR_RETURN(int64_t rows, WriteRows(st, format, stdout));
//
// Table: NULL prints empty, reals with 4 significant decimals, `*_at` columns as UTC times.
// CSV: RFC 4180 quoting, a header row, reals in shortest round-trip form, NULL empty.
// JSON: an array of objects (one per line); JSONL: one object per line; NULL is null.
// The table format holds all rows to align them; the others stream.
#ifndef BATCHLAB_RESULTS_TABLE_WRITER_H_
#define BATCHLAB_RESULTS_TABLE_WRITER_H_

#include <cstdint>
#include <cstdio>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "results/database.h"

namespace batchlab::results {

enum class OutputFormat { kTable, kCsv, kJson, kJsonl };

// Parses `name` for the option `flag`; only the formats in `allowed` are accepted, and an
// error names the flag and lists them.
StatusOr<OutputFormat> ParseOutputFormat(std::string_view name, std::string_view flag,
                                         const std::vector<OutputFormat>& allowed);
const char* OutputFormatName(OutputFormat f);

// Steps `st` to its end, writing the header and every row to `out`. Returns the row count.
StatusOr<int64_t> WriteRows(Statement& st, OutputFormat format, std::FILE* out);

}  // namespace batchlab::results

#endif  // BATCHLAB_RESULTS_TABLE_WRITER_H_
