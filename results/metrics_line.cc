// SAX parsing of one metrics line; see metrics_line.h.
#include "results/metrics_line.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>

#include <nlohmann/json.hpp>

namespace batchlab::results {
namespace {

using json = nlohmann::json;

// Collects the top-level fields of one JSON object into a MetricsLine.
// A bare non-finite token becomes the JSON string "\u0001<token>" for a second parse.
constexpr char kNonFiniteMark = '\x01';

double NonFiniteValue(const std::string& marked) {
  const bool negative = marked.size() > 1 && marked[1] == '-';
  const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(marked.back())));
  if (c == 'n') return std::numeric_limits<double>::quiet_NaN();  // "nan"
  return negative ? -std::numeric_limits<double>::infinity()
                  : std::numeric_limits<double>::infinity();
}

bool IsNonFiniteWord(std::string_view w) {
  std::string lower;
  for (char c : w) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!lower.empty() && (lower[0] == '-' || lower[0] == '+')) lower.erase(0, 1);
  return lower == "nan" || lower == "inf" || lower == "infinity";
}

// `line` with every bare NaN/Infinity/inf token (outside strings) as a marked JSON string, or
// nullopt if it has none.
std::optional<std::string> MarkNonFiniteTokens(std::string_view line) {
  std::string out;
  bool in_string = false, changed = false;
  for (size_t i = 0; i < line.size();) {
    const char c = line[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < line.size()) {
        out += line[i + 1];
        i += 2;
        continue;
      }
      if (c == '"') in_string = false;
      ++i;
      continue;
    }
    if (c == '"') {
      in_string = true;
      out += c;
      ++i;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        (c == '-' && i + 1 < line.size() &&
         std::isdigit(static_cast<unsigned char>(line[i + 1])))) {
      // A number too large for a double (1e999) is infinite, as strtod reads it.
      size_t j = i + 1;
      while (j < line.size() && std::strchr("0123456789eE+-.", line[j]) != nullptr) ++j;
      const std::string number(line.substr(i, j - i));
      if (std::isinf(std::strtod(number.c_str(), nullptr))) {
        out += c == '-' ? "\"\\u0001-inf\"" : "\"\\u0001inf\"";
        changed = true;
      } else {
        out += number;
      }
      i = j;
      continue;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '-' || c == '+') {
      size_t j = i + 1;
      while (j < line.size() && std::isalpha(static_cast<unsigned char>(line[j]))) ++j;
      const std::string_view word = line.substr(i, j - i);
      if (IsNonFiniteWord(word)) {
        out += "\"\\u0001";  // kNonFiniteMark, escaped as JSON requires
        out.append(word);
        out += '"';
        changed = true;
        i = j;
        continue;
      }
    }
    out += c;
    ++i;
  }
  if (!changed) return std::nullopt;
  return out;
}

class LineHandler : public nlohmann::json_sax<json> {
 public:
  LineHandler(MetricsLine& out, bool marks_allowed) : out_(out), marks_allowed_(marks_allowed) {}

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t v) override { return Number(static_cast<double>(v), v); }
  bool number_unsigned(number_unsigned_t v) override {
    return Number(static_cast<double>(v), v <= static_cast<number_unsigned_t>(INT64_MAX)
                                              ? std::optional<int64_t>(static_cast<int64_t>(v))
                                              : std::nullopt);
  }
  bool number_float(number_float_t v, const string_t&) override { return Number(v, std::nullopt); }
  bool string(string_t& v) override {
    if (depth_ == 1 && !v.empty() && v[0] == kNonFiniteMark && marks_allowed_) {
      return Number(NonFiniteValue(v), std::nullopt);
    }
    if (depth_ == 1 && key_ == "kind") {
      out_.kind.assign(v);
      has_kind_ = true;
    }
    return true;
  }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    if (depth_ == 0 && seen_root_) return false;
    seen_root_ = true;
    ++depth_;
    return true;
  }
  bool end_object() override {
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    if (depth_ == 0) {
      not_object_ = true;
      return false;
    }
    ++depth_;
    return true;
  }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool key(string_t& k) override {
    if (depth_ == 1) key_.assign(k);
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

  bool top_level_not_object() const { return not_object_; }
  bool seen_root() const { return seen_root_; }
  bool has_kind() const { return has_kind_; }
  bool has_seq() const { return has_seq_; }

 private:
  // A number at the top level: `seq` and `step` (integers) are the keys, the rest are metrics.
  bool Number(double v, std::optional<int64_t> as_int) {
    if (depth_ == 0) {
      not_object_ = true;
      return false;
    }
    if (depth_ != 1) return true;
    if (key_ == "seq") {
      if (as_int) {
        out_.seq = *as_int;
        has_seq_ = true;
      }
      return true;
    }
    if (key_ == "step") {
      // A fractional step is truncated; one no int64 can hold (or NaN) is no step at all.
      if (as_int) {
        out_.step = as_int;
      } else if (std::isfinite(v) && std::fabs(v) < 9.2e18) {
        out_.step = static_cast<int64_t>(v);
      }
      return true;
    }
    if (out_.num_values == out_.values.size()) out_.values.emplace_back();
    auto& slot = out_.values[out_.num_values++];
    slot.first.assign(key_);
    slot.second = v;
    return true;
  }

  MetricsLine& out_;
  bool marks_allowed_;
  std::string key_;
  int depth_ = 0;
  bool seen_root_ = false, not_object_ = false, has_kind_ = false, has_seq_ = false;
};

// Sets out.error if a parsed line lacks what every record has.
void CheckRecord(const LineHandler& handler, MetricsLine& out) {
  if (!handler.seen_root()) {
    out.error = "not a JSON object";  // a string, null or boolean on its own
  } else if (!handler.has_seq()) {
    out.error = "field `seq` is missing or not an integer";
  } else if (!handler.has_kind()) {
    out.error = "field `kind` is missing or not a string";
  } else if (out.kind.empty()) {
    out.error = "field `kind` is empty";  // every record names its kind (docs/protocol.md)
  }
}

}  // namespace

const MetricsLine& MetricsLineParser::Parse(std::string_view line) {
  line_.error.clear();
  line_.seq = -1;
  line_.kind.clear();
  line_.step.reset();
  line_.num_values = 0;
  line_.non_finite_tokens = false;
  line_.as_json.clear();
  LineHandler handler(line_, /*marks_allowed=*/false);
  bool ok = json::sax_parse(line.begin(), line.end(), &handler);
  if (!ok && !handler.top_level_not_object()) {
    if (std::optional<std::string> marked = MarkNonFiniteTokens(line)) {
      line_.seq = -1;
      line_.kind.clear();
      line_.step.reset();
      line_.num_values = 0;
      LineHandler lenient(line_, /*marks_allowed=*/true);
      if (json::sax_parse(marked->begin(), marked->end(), &lenient)) {
        line_.non_finite_tokens = true;
        line_.as_json = std::move(*marked);
        CheckRecord(lenient, line_);
        return line_;
      }
    }
  }
  if (!ok) {
    line_.error = handler.top_level_not_object() ? "not a JSON object" : "not valid JSON";
    return line_;
  }
  CheckRecord(handler, line_);
  return line_;
}

}  // namespace batchlab::results
