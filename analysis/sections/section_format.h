// The cells and JSON values that the study sections' Tables and Json functions share
// (gns_section.h, target_section.h, ...). Cells hold exact numbers: the text views round them
// (4 significant digits, percents 3), the CSV and JSON keep them (results/table_writer.h
// FormatRows). In JSON a non-finite number is null.
#ifndef BATCHLAB_ANALYSIS_SECTIONS_SECTION_FORMAT_H_
#define BATCHLAB_ANALYSIS_SECTIONS_SECTION_FORMAT_H_

#include <cmath>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "analysis/estimators/bootstrap.h"
#include "analysis/data/table.h"

namespace batchlab::analysis {

inline std::string I(int64_t v) { return std::to_string(v); }
// A table cell's percent: exact (the table views round it, CSV keeps it).
inline std::string Pct(double v) { return results::ExactNumber(100 * v) + "%"; }
// A percent inside a sentence (a note, a flag): 3 significant digits ("51.9%", "100%").
inline std::string ProsePct(double v) { return results::ProseNumber(100 * v) + "%"; }

inline nlohmann::json Num(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

// Every estimate's interval with how it was computed; an unavailable one has null bounds and
// says why (never a zero-width interval).
inline nlohmann::json IntervalJson(const Interval& i) {
  using nlohmann::json;
  json j = {{"value", Num(i.value)},
            {"low", i.available() ? Num(i.low) : json(nullptr)},
            {"high", i.available() ? Num(i.high) : json(nullptr)},
            {"confidence", i.confidence},
            {"available", i.available()},
            {"method", i.method}};
  if (!i.available()) j["unavailable"] = i.unavailable;
  return j;
}

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_SECTIONS_SECTION_FORMAT_H_
