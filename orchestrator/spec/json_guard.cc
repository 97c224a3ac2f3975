#include "orchestrator/spec/json_guard.h"

#include <set>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace batchlab::orchestrator {
namespace {

using nlohmann::json;

// Follows the SAX events with a stack of open containers, so every error can name its path.
class GuardSax {
 public:
  bool null() { return Value(); }
  bool boolean(bool) { return Value(); }
  bool number_integer(json::number_integer_t) { return Value(); }
  bool number_unsigned(json::number_unsigned_t) { return Value(); }
  bool number_float(json::number_float_t, const std::string&) { return Value(); }
  bool string(std::string&) { return Value(); }
  bool binary(json::binary_t&) { return Value(); }
  bool start_object(size_t) { return Open(false); }
  bool start_array(size_t) { return Open(true); }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }
  bool key(std::string& k) {
    Frame& top = stack_.back();
    top.key = k;
    if (!top.keys.insert(k).second) {
      error_ = InvalidArgumentError(fmt::format(
          "{}: duplicate key (an object may name a field once; remove one of the two)", Path()));
      return false;
    }
    return true;
  }
  bool parse_error(size_t, const std::string&, const nlohmann::detail::exception&) {
    return false;  // the DOM parser reports it, with its position
  }

  const Status& error() const { return error_; }

 private:
  struct Frame {
    bool array = false;
    size_t index = 0;
    std::string key;
    std::set<std::string> keys;
  };

  bool Open(bool array) {
    if (static_cast<int>(stack_.size()) >= kMaxJsonDepth) {
      error_ =
          InvalidArgumentError(fmt::format("{}: nests deeper than {} levels of objects and arrays",
                                           stack_.empty() ? "(top level)" : Path(), kMaxJsonDepth));
      return false;
    }
    stack_.push_back(Frame{array, 0, {}, {}});
    return true;
  }
  bool Close() {
    stack_.pop_back();
    return Value();
  }
  bool Value() {
    if (!stack_.empty() && stack_.back().array) ++stack_.back().index;
    return true;
  }

  // The path of the current position, e.g. axes.batch_size[3] or launch.env["A B"].
  std::string Path() const {
    std::string out;
    for (const Frame& f : stack_) {
      out = f.array ? out + fmt::format("[{}]", f.index) : JoinPath(out, f.key);
    }
    return out.empty() ? "(top level)" : out;
  }

  std::vector<Frame> stack_;
  Status error_;
};

}  // namespace

Status CheckJsonText(const std::string& text) {
  if (text.size() > kMaxSpecBytes) {
    return InvalidArgumentError(
        fmt::format("(top level): the spec is {} bytes, more than the {} a spec may have",
                    text.size(), kMaxSpecBytes));
  }
  GuardSax sax;
  json::sax_parse(text, &sax, json::input_format_t::json, /*strict=*/true,
                  /*ignore_comments=*/false);
  return sax.error();
}

}  // namespace batchlab::orchestrator
