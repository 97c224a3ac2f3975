// The spec's typed readers (see spec_reader.h).
#include "orchestrator/spec/spec_reader.h"

#include <cmath>

#include <fmt/format.h>

#include "base/closest_name.h"
#include "base/json_path.h"

namespace batchlab::orchestrator::spec_parsing {

using nlohmann::ordered_json;

Status Bad(const std::string& where, const std::string& what) {
  return InvalidArgumentError(fmt::format("{}: {}", where, what));
}

Status OnlyKeys(const ordered_json& obj, const std::string& where,
                const std::vector<std::string>& allowed) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool ok = false;
    for (const auto& a : allowed) ok = ok || it.key() == a;
    if (!ok) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      std::string path = JoinPath(where, it.key());
      return Bad(path, "unknown field; allowed " +
                           (where.empty() ? std::string("at the top level") : "here") + ": " +
                           list + DidYouMean(it.key(), allowed));
    }
  }
  return OkStatus();
}

StatusOr<long long> Integer(const ordered_json& v, const std::string& where, long long min,
                            long long max) {
  const bool huge =
      v.is_number_unsigned() && v.get<unsigned long long>() > static_cast<unsigned long long>(max);
  if (!v.is_number_integer() || (!huge && v.get<long long>() < min)) {
    return Bad(where, fmt::format("{} is not {}", v.dump(),
                                  min == 1   ? "a positive integer"
                                  : min == 0 ? "a non-negative integer"
                                             : fmt::format("an integer >= {}", min)));
  }
  if (huge || v.get<long long>() > max) {
    return Bad(where, fmt::format("{} is too large: at most {} (docs/spec.md, \"Bounds\")",
                                  v.dump(), max));
  }
  return v.get<long long>();
}

StatusOr<double> Number(const ordered_json& v, const std::string& where, double min, double max) {
  if (!v.is_number() || !(v.get<double>() >= min)) {
    return Bad(where, fmt::format("{} is not a number >= {}", v.dump(), min));
  }
  if (!(v.get<double>() <= max)) {
    return Bad(where, fmt::format("{} is too large: at most {} (docs/spec.md, \"Bounds\")",
                                  v.dump(), max));
  }
  return v.get<double>();
}

StatusOr<std::string> String(const ordered_json& v, const std::string& where) {
  if (!v.is_string()) return Bad(where, fmt::format("{} is not a string", v.dump()));
  return v.get<std::string>();
}

StatusOr<std::vector<std::string>> StringList(const ordered_json& v, const std::string& where) {
  if (!v.is_array()) return Bad(where, fmt::format("{} is not an array of strings", v.dump()));
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size(); ++i) {
    BATCHLAB_ASSIGN_OR_RETURN(auto s, String(v[i], fmt::format("{}[{}]", where, i)));
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace batchlab::orchestrator::spec_parsing
