// Spec extension vs change (see spec_extension.h).
#include "orchestrator/spec/spec_extension.h"

#include <algorithm>
#include <optional>
#include <vector>

#include <fmt/format.h>

namespace batchlab::orchestrator {
namespace {

using json = nlohmann::json;

// Top-level fields that say how runs are run, not what they are.
bool IsExecutionField(const std::string& key) {
  return key == "description" || key == "max_runs" || key == "resources" || key == "launch" ||
         key == "slurm" || key == "prune" || key == "stall";
}

// The seeds a spec asks for (docs/spec.md: seeds, or repeats from seed; default [1]).
json SeedsOf(const json& spec) {
  if (spec.contains("seeds")) return spec["seeds"];
  if (spec.contains("repeats")) {
    json out = json::array();
    const long long first = spec.value("seed", 1LL);
    for (long long i = 0; i < spec["repeats"].get<long long>(); ++i) out.push_back(first + i);
    return out;
  }
  return json::array({1});
}

// The elements of `now` that are not in `old`; nullopt when `old` has one `now` lacks.
std::optional<json> Added(const json& old, const json& now) {
  if (!old.is_array() || !now.is_array()) return std::nullopt;
  for (const json& v : old) {
    if (std::find(now.begin(), now.end(), v) == now.end()) return std::nullopt;
  }
  json added = json::array();
  for (const json& v : now) {
    if (std::find(old.begin(), old.end(), v) == old.end()) added.push_back(v);
  }
  return added;
}

// A zip group as its list of tuples (position i of every path).
json Tuples(const json& group) {
  json out = json::array();
  size_t n = 0;
  for (const auto& [path, values] : group.items()) {
    if (values.is_array()) n = std::max(n, values.size());
  }
  for (size_t i = 0; i < n; ++i) {
    json t = json::object();
    for (const auto& [path, values] : group.items()) {
      t[path] = values.is_array() && i < values.size() ? values[i] : json();
    }
    out.push_back(t);
  }
  return out;
}

std::string Dotted(const std::string& pointer) {
  std::string out;
  for (char c : pointer.substr(pointer.empty() ? 0 : 1)) out += c == '/' ? '.' : c;
  return out;
}

// The first difference between `a` and `b` under `prefix`, as "field: old -> new".
std::string FirstDifference(const json& a, const json& b, const std::string& prefix) {
  const json patch = json::diff(a, b);
  if (patch.empty()) return prefix;
  const json& op = patch.front();
  const std::string path = prefix + Dotted(op.value("path", ""));
  const json::json_pointer ptr(op.value("path", ""));
  const std::string was = a.contains(ptr) ? a.at(ptr).dump() : "(absent)";
  const std::string is = b.contains(ptr) ? b.at(ptr).dump() : "(absent)";
  return fmt::format("{}: {} -> {}", path, was, is);
}

SpecChange Changed(std::string detail) { return {SpecChange::kChanged, std::move(detail)}; }

}  // namespace

SpecChange CompareSpecs(const json& stored, const json& now) {
  if (stored == now) return {};
  std::vector<std::string> added;
  // Every field but the extensible and execution ones must be equal.
  json keys = json::array();
  for (const json* spec : {&stored, &now}) {
    for (const auto& [key, value] : spec->items()) keys.push_back(key);
  }
  for (const json& k : keys) {
    const std::string key = k.get<std::string>();
    if (IsExecutionField(key) || key == "axes" || key == "zip" || key == "seeds" ||
        key == "repeats" || key == "seed") {
      continue;
    }
    const json a = stored.value(key, json()), b = now.value(key, json());
    if (a != b) return Changed(FirstDifference(a, b, key + (a.is_object() ? "." : "")));
  }
  // Seeds: a superset.
  const json old_seeds = SeedsOf(stored), new_seeds = SeedsOf(now);
  std::optional<json> seeds = Added(old_seeds, new_seeds);
  if (!seeds) {
    return Changed(
        fmt::format("seeds: {} -> {} (a seed was removed)", old_seeds.dump(), new_seeds.dump()));
  }
  if (!seeds->empty()) added.push_back(fmt::format("seeds {}", seeds->dump()));
  // Axes: the same paths, each a superset.
  const json old_axes = stored.value("axes", json::object());
  const json new_axes = now.value("axes", json::object());
  for (const auto& [path, values] : old_axes.items()) {
    if (!new_axes.contains(path)) return Changed(fmt::format("axes.{}: removed", path));
    std::optional<json> more = Added(values, new_axes[path]);
    if (!more) {
      return Changed(fmt::format("axes.{}: {} -> {} (a value was removed or changed)", path,
                                 values.dump(), new_axes[path].dump()));
    }
    if (!more->empty()) added.push_back(fmt::format("axes.{} {}", path, more->dump()));
  }
  for (const auto& [path, values] : new_axes.items()) {
    if (!old_axes.contains(path)) return Changed(fmt::format("axes.{}: added as a new axis", path));
  }
  // Zip groups: the same groups (by position) with the same paths; every old tuple kept.
  const json old_zip = stored.value("zip", json::array());
  const json new_zip = now.value("zip", json::array());
  if (old_zip.size() != new_zip.size()) {
    return Changed(fmt::format("zip: {} groups -> {}", old_zip.size(), new_zip.size()));
  }
  for (size_t i = 0; i < old_zip.size(); ++i) {
    std::vector<std::string> a, b;
    for (const auto& [path, v] : old_zip[i].items()) a.push_back(path);
    for (const auto& [path, v] : new_zip[i].items()) b.push_back(path);
    if (a != b)
      return Changed(
          fmt::format("zip[{}]: paths {} -> {}", i, fmt::join(a, ","), fmt::join(b, ",")));
    std::optional<json> more = Added(Tuples(old_zip[i]), Tuples(new_zip[i]));
    if (!more) return Changed(fmt::format("zip[{}]: a tuple was removed or changed", i));
    if (!more->empty()) added.push_back(fmt::format("zip[{}] {}", i, more->dump()));
  }
  if (added.empty()) return {SpecChange::kSame, "only how runs are run changed"};
  return {SpecChange::kExtended, "adds " + fmt::format("{}", fmt::join(added, "; adds "))};
}

}  // namespace batchlab::orchestrator
