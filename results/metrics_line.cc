// SAX parsing of one metrics line; see metrics_line.h.
#include "results/metrics_line.h"

#include <nlohmann/json.hpp>

namespace batchlab::results {
namespace {

using json = nlohmann::json;

// Collects the top-level fields of one JSON object into a MetricsLine.
class LineHandler : public nlohmann::json_sax<json> {
 public:
  explicit LineHandler(MetricsLine& out) : out_(out) {}

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
      out_.step = as_int ? as_int : std::optional<int64_t>(static_cast<int64_t>(v));
      return true;
    }
    if (out_.num_values == out_.values.size()) out_.values.emplace_back();
    auto& slot = out_.values[out_.num_values++];
    slot.first.assign(key_);
    slot.second = v;
    return true;
  }

  MetricsLine& out_;
  std::string key_;
  int depth_ = 0;
  bool seen_root_ = false, not_object_ = false, has_kind_ = false, has_seq_ = false;
};

}  // namespace

const MetricsLine& MetricsLineParser::Parse(std::string_view line) {
  line_.error.clear();
  line_.seq = -1;
  line_.kind.clear();
  line_.step.reset();
  line_.num_values = 0;
  LineHandler handler(line_);
  const bool ok = json::sax_parse(line.begin(), line.end(), &handler);
  if (!ok) {
    line_.error = handler.top_level_not_object() ? "not a JSON object" : "not valid JSON";
  } else if (!handler.seen_root()) {
    line_.error = "not a JSON object";  // a string, null or boolean on its own
  } else if (!handler.has_seq()) {
    line_.error = "field `seq` is missing or not an integer";
  } else if (!handler.has_kind()) {
    line_.error = "field `kind` is missing or not a string";
  }
  return line_;
}

}  // namespace batchlab::results
