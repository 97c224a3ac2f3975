// Targets no run can meet (see target_range.h).
#include "base/target_range.h"

#include <fmt/format.h>

namespace batchlab {
namespace {

bool EndsWith(std::string_view s, std::string_view end) {
  return s.size() >= end.size() && s.compare(s.size() - end.size(), end.size(), end) == 0;
}

}  // namespace

std::optional<UnreachableWhy> UnreachableTarget(std::string_view metric, std::string_view op,
                                                double value) {
  const bool up = op == ">=" || op == ">";
  const bool strict = op == ">" || op == "<";
  if (EndsWith(metric, "accuracy")) {
    // Above 1 (or at 1 with >) upward, below 0 (or at 0 with <) downward.
    const bool never = up ? (value > 1 || (strict && value >= 1))
                          : (value < 0 || (strict && value <= 0));
    if (!never) return std::nullopt;
    UnreachableWhy out{fmt::format("{} is a fraction in [0, 1], so no run can meet it", metric),
                       ""};
    if (value > 1 && value <= 100) {
      out.fix = fmt::format("for {}% write {}", value, value / 100);
    }
    return out;
  }
  if (EndsWith(metric, "loss") && !up && (value < 0 || (strict && value <= 0))) {
    return UnreachableWhy{fmt::format("{} is never negative, so no run can meet it", metric), ""};
  }
  return std::nullopt;
}

}  // namespace batchlab
