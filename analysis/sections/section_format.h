// The JSON values that the study sections' Json functions share (gns_section.h,
// target_section.h, ...); their table cells are results/number_format.h's (ExactNumber,
// IntegerCell, PercentCell): exact, the text views round them, the CSV and JSON keep them
// (results/table_writer.h FormatRows). In JSON a non-finite number is null.
#ifndef BATCHLAB_ANALYSIS_SECTIONS_SECTION_FORMAT_H_
#define BATCHLAB_ANALYSIS_SECTIONS_SECTION_FORMAT_H_

#include <cmath>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "analysis/estimators/bootstrap.h"
#include "analysis/data/table.h"

namespace batchlab::analysis {

// A number as a JSON value: null where it is not finite (JSON has no inf or nan).
inline nlohmann::json JsonNumber(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

// Every estimate's interval with how it was computed; an unavailable one has null bounds and
// says why (never a zero-width interval).
inline nlohmann::json IntervalJson(const Interval& i) {
  using nlohmann::json;
  json j = {{"value", JsonNumber(i.value)},
            {"low", i.available() ? JsonNumber(i.low) : json(nullptr)},
            {"high", i.available() ? JsonNumber(i.high) : json(nullptr)},
            {"confidence", i.confidence},
            {"available", i.available()},
            {"method", i.method}};
  if (!i.available()) j["unavailable"] = i.unavailable;
  return j;
}

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_SECTIONS_SECTION_FORMAT_H_
