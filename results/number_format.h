// How batchlab writes a number as text, in one place: the exact cell of a table, the rounded
// figure people read in a table or a sentence, and percents. The CLI, the report, the live view,
// the analysis sections and the orchestrator's messages all format numbers with these (no fmt
// "{:.4g}" at a call site).
//
//   rows.push_back({ExactNumber(fit.b_crit), PercentCell(r.efficiency), ExactCell(f.lr)});
//   note = fmt::format("B_crit is about {} ({} of the runs)", ProseNumber(b), ProsePercent(share));
//
// Non-finite values read "inf", "-inf" and "nan" everywhere.
#ifndef BATCHLAB_RESULTS_NUMBER_FORMAT_H_
#define BATCHLAB_RESULTS_NUMBER_FORMAT_H_

#include <cstdint>
#include <optional>
#include <string>

namespace batchlab::results {

// `v` exactly, in its shortest form that reads back as `v` ("10752", "0.07081234", "1e-07"):
// the cell of a table that FormatRows (table_writer.h) rounds for people and keeps exact in CSV
// and JSON.
std::string ExactNumber(double v);

// ExactNumber of the value, or "" (an empty cell) when there is none.
std::string ExactCell(const std::optional<double>& v);

// A count as a table cell ("10752").
std::string IntegerCell(int64_t v);

// A fraction as a table's percent cell, exact ("7.66%" for 0.0766): the table views round it,
// the CSV keeps it (in a column named `<name>_percent`).
std::string PercentCell(double fraction);

// The one rounding of numbers for people: `v` with `significant` significant digits, shortest
// form ("912.5", "0.85", "1.25e+05"). Cells formatted with it are re-styled per column by the
// table format (FormatRows), so a column of the aligned text table reads in one style whatever
// the cells' own form.
std::string FormatNumber(double v, int significant = 4);

// A number inside a sentence or a chart label: 3 significant digits ("B_crit is about 913"),
// where tables show 4; plain digits from 0.001 to a million ("125000", "100%", never "1e+02%"),
// FormatNumber's e-notation outside ("1.25e+15").
std::string ProseNumber(double v);

// A fraction as a percent inside a sentence, ProseNumber's digits ("51.9%", "100%").
std::string ProsePercent(double fraction);

// A fraction as a whole percent ("12%", "95%"): a saving in a sentence, a confidence level.
std::string WholePercent(double fraction);

// `v` with exactly `decimals` decimals ("12.3", "1235"): a duration or an estimate in a message
// for people where a fixed precision reads better than significant digits ("preempted after
// 12.3 s", "lower bound 1235 s").
std::string FixedNumber(double v, int decimals);

}  // namespace batchlab::results

#endif  // BATCHLAB_RESULTS_NUMBER_FORMAT_H_
