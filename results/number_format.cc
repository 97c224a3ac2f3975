// Numbers as text; see number_format.h.
#include "results/number_format.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace batchlab::results {

std::string ExactNumber(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  // An integral value as an integer ("12000000000000", never "1.2e+13"), up to 2^53 where
  // doubles hold every integer; otherwise the shortest form that reads back as exactly v.
  if (std::fabs(v) < 9007199254740992.0 && v == std::trunc(v)) return fmt::format("{:.0f}", v);
  return fmt::format("{}", v);
}

std::string ExactCell(const std::optional<double>& v) { return v ? ExactNumber(*v) : ""; }

std::string IntegerCell(int64_t v) { return std::to_string(v); }

std::string PercentCell(double fraction) { return ExactNumber(100 * fraction) + "%"; }

std::string FormatNumber(double v, int significant) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.{}g}", v, significant);
}

std::string ProseNumber(double v) {
  const double a = std::fabs(v);
  if (!std::isfinite(v) || a == 0 || a < 1e-3 || a >= 1e6) return FormatNumber(v, 3);
  // Between 0.001 and a million a sentence reads plain digits, never "1e+02": 3 significant
  // digits, then as many decimals as they need ("27985" -> "28000", "0.0059712" -> "0.00597").
  const double rounded = std::stod(FormatNumber(v, 3));
  const int decimals =
      std::max(0, 2 - static_cast<int>(std::floor(std::log10(std::fabs(rounded)))));
  std::string out = fmt::format("{:.{}f}", rounded, decimals);
  if (out.find('.') != std::string::npos) {
    while (out.back() == '0') out.pop_back();
    if (out.back() == '.') out.pop_back();
  }
  return out;
}

std::string ProsePercent(double fraction) { return ProseNumber(100 * fraction) + "%"; }

std::string WholePercent(double fraction) { return fmt::format("{:.0f}%", 100 * fraction); }

std::string FixedNumber(double v, int decimals) { return fmt::format("{:.{}f}", v, decimals); }

}  // namespace batchlab::results
