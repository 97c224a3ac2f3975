// What a spec sweeps: its axes and zipped axes, the LR search's coarse grid, random sampling,
// constraints, seeds and repeats (see spec_sections.h).
#include <cmath>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/json_path.h"
#include "base/spec_bounds.h"
#include "orchestrator/spec/config_schema.h"
#include "orchestrator/spec/expansion.h"
#include "orchestrator/spec/spec_reader.h"
#include "orchestrator/spec/spec_sections.h"

namespace batchlab::orchestrator::spec_parsing {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

StatusOr<Axis::Column> ParseColumn(bool user_program, const std::string& path,
                                   const ordered_json& values, const std::string& where) {
  if (!values.is_array() || values.empty()) {
    return Bad(where, fmt::format("{} is not a non-empty array of values", values.dump()));
  }
  Axis::Column col{path, {}};
  for (size_t i = 0; i < values.size(); ++i) {
    json v = json::parse(values[i].dump());
    BATCHLAB_RETURN_IF_ERROR(
        ValidateConfigValue(path, v, fmt::format("{}[{}]", where, i), user_program));
    col.values.push_back(std::move(v));
  }
  return col;
}

}  // namespace

Status CheckPathsDisjoint(const SweptPaths& paths) {
  for (size_t i = 0; i < paths.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      const auto& a = paths[i].first;
      const auto& b = paths[j].first;
      if (a == b || a.rfind(b + ".", 0) == 0 || b.rfind(a + ".", 0) == 0) {
        return Bad(paths[i].second,
                   fmt::format("{} is already swept by {}; sweep each config field once",
                               json(a).dump(), paths[j].second));
      }
    }
  }
  return OkStatus();
}


Status ParseAxes(const ordered_json& doc, Spec* spec,
                 SweptPaths* paths) {
  if (doc.contains("axes")) {
    const auto& axes = doc["axes"];
    if (!axes.is_object()) return Bad("axes", "is not an object of \"path\": [values]");
    for (auto it = axes.begin(); it != axes.end(); ++it) {
      std::string where = JoinPath("axes", it.key());
      BATCHLAB_ASSIGN_OR_RETURN(auto col,
                                ParseColumn(spec->user_program, it.key(), it.value(), where));
      paths->emplace_back(it.key(), where);
      spec->axes.push_back(Axis{{std::move(col)}});
    }
  }
  if (doc.contains("zip")) {
    const auto& zip = doc["zip"];
    if (!zip.is_array()) return Bad("zip", "is not an array of {\"path\": [values], ...} groups");
    for (size_t g = 0; g < zip.size(); ++g) {
      std::string gwhere = fmt::format("zip[{}]", g);
      if (!zip[g].is_object() || zip[g].empty()) {
        return Bad(gwhere, "is not a non-empty object of \"path\": [values]");
      }
      Axis axis;
      for (auto it = zip[g].begin(); it != zip[g].end(); ++it) {
        std::string where = JoinPath(gwhere, it.key());
        BATCHLAB_ASSIGN_OR_RETURN(auto col,
                                  ParseColumn(spec->user_program, it.key(), it.value(), where));
        if (!axis.columns.empty() && col.values.size() != axis.size()) {
          return Bad(where, fmt::format("has {} values but {} has {}; zipped lists must have "
                                        "equal length",
                                        col.values.size(), axis.columns.front().path, axis.size()));
        }
        paths->emplace_back(it.key(), where);
        axis.columns.push_back(std::move(col));
      }
      spec->axes.push_back(std::move(axis));
    }
  }
  return OkStatus();
}

Status ParseLrSearch(const ordered_json& doc, Spec* spec,
                     SweptPaths* paths) {
  const ordered_json& o = doc["lr_search"];
  if (!o.is_object()) {
    return Bad("lr_search",
               "is not an object {\"min\": 0.001, \"max\": 1, \"grid\": 5, "
               "\"rounds\": 2} (the range of learning rates searched per batch size)");
  }
  BATCHLAB_RETURN_IF_ERROR(OnlyKeys(o, "lr_search", {"path", "min", "max", "grid", "rounds"}));
  LrSearch& ls = spec->lr_search;
  ls.enabled = true;
  if (o.contains("path")) {
    BATCHLAB_ASSIGN_OR_RETURN(ls.path, String(o["path"], "lr_search.path"));
  }
  if (ls.path != "lr.base" && ls.path.rfind("params.", 0) != 0) {
    return Bad("lr_search.path", fmt::format("\"{}\" cannot be searched: use \"lr.base\" "
                                             "(default) or a \"params.*\" number of your program",
                                             ls.path));
  }
  for (const char* key : {"min", "max"}) {
    if (!o.contains(key)) {
      return Bad(fmt::format("lr_search.{}", key),
                 "is missing: give the range, e.g. \"min\": 0.001, \"max\": 1");
    }
  }
  BATCHLAB_ASSIGN_OR_RETURN(ls.min, Number(o["min"], "lr_search.min", 1e-12, 1e6));
  BATCHLAB_ASSIGN_OR_RETURN(ls.max, Number(o["max"], "lr_search.max", 1e-12, 1e6));
  if (!(ls.max > ls.min)) {
    return Bad("lr_search.max",
               fmt::format("{} is not greater than lr_search.min ({})", ls.max, ls.min));
  }
  if (o.contains("grid")) {
    BATCHLAB_ASSIGN_OR_RETURN(long long g, Integer(o["grid"], "lr_search.grid", 2, 50));
    ls.grid = static_cast<int>(g);
  }
  if (o.contains("rounds")) {
    BATCHLAB_ASSIGN_OR_RETURN(long long r, Integer(o["rounds"], "lr_search.rounds", 0, 10));
    ls.rounds = static_cast<int>(r);
  }
  bool has_target = spec->base.contains("target") && spec->base["target"].is_object();
  for (const auto& p : *paths) has_target = has_target || p.first == "target";
  if (!has_target) {
    return Bad("lr_search",
               "needs a target: learning rates are ranked by steps to target; set "
               "base.target, e.g. {\"metric\": \"test_accuracy\", \"op\": \">=\", "
               "\"value\": 0.85}");
  }
  ordered_json grid = ordered_json::array();
  for (double v : CoarseGrid(ls)) grid.push_back(v);
  BATCHLAB_ASSIGN_OR_RETURN(auto col,
                            ParseColumn(spec->user_program, ls.path, grid, "lr_search.path"));
  paths->emplace_back(ls.path, "lr_search.path");
  spec->axes.push_back(Axis{{std::move(col)}});
  return OkStatus();
}

Status ParseRandom(const ordered_json& r, Spec* spec,
                   SweptPaths* paths) {
  if (!r.is_object()) return Bad("random", "is not an object {\"count\", \"seed\", \"params\"}");
  BATCHLAB_RETURN_IF_ERROR(OnlyKeys(r, "random", {"count", "seed", "params"}));
  if (!r.contains("count")) return Bad("random.count", "is missing (number of random draws)");
  BATCHLAB_ASSIGN_OR_RETURN(long long count,
                            Integer(r["count"], "random.count", 1, kMaxPointsEnumerated));
  spec->random.count = static_cast<int>(count);
  if (r.contains("seed")) {
    BATCHLAB_ASSIGN_OR_RETURN(long long seed, Integer(r["seed"], "random.seed", 0));
    spec->random.seed = static_cast<uint64_t>(seed);
  }
  if (!r.contains("params") || !r["params"].is_object() || r["params"].empty()) {
    return Bad("random.params", "must be a non-empty object of \"path\": {distribution}");
  }
  for (auto it = r["params"].begin(); it != r["params"].end(); ++it) {
    std::string where = JoinPath("random.params", it.key());
    const auto& d = it.value();
    if (!d.is_object() || d.size() != 1) {
      return Bad(where,
                 "must be exactly one of {\"uniform\": [lo, hi]}, {\"log_uniform\": [lo, "
                 "hi]}, {\"int_uniform\": [lo, hi]}, {\"choice\": [values]}");
    }
    RandomParam p;
    p.path = it.key();
    const std::string kind = d.begin().key();
    const auto& arg = d.begin().value();
    std::string awhere = where + "." + kind;
    if (kind == "choice") {
      p.distribution = RandomParam::Distribution::kChoice;
      BATCHLAB_ASSIGN_OR_RETURN(auto col, ParseColumn(spec->user_program, p.path, arg, awhere));
      p.choices = std::move(col.values);
    } else if (kind == "uniform" || kind == "log_uniform" || kind == "int_uniform") {
      p.distribution = kind == "uniform"       ? RandomParam::Distribution::kUniform
                       : kind == "log_uniform" ? RandomParam::Distribution::kLogUniform
                                               : RandomParam::Distribution::kIntUniform;
      if (!arg.is_array() || arg.size() != 2 || !arg[0].is_number() || !arg[1].is_number()) {
        return Bad(awhere, fmt::format("{} is not [low, high] (two numbers)", arg.dump()));
      }
      p.low = arg[0].get<double>();
      p.high = arg[1].get<double>();
      if (!(p.low <= p.high)) return Bad(awhere, "low must not exceed high");
      if (kind == "log_uniform" && !(p.low > 0))
        return Bad(awhere, "low must be > 0 for log_uniform");
      if (kind == "int_uniform" && (!arg[0].is_number_integer() || !arg[1].is_number_integer())) {
        return Bad(awhere, "int_uniform bounds must be integers");
      }
      // Both ends must be valid values of the field (e.g. lr.base > 0).
      // (int_uniform ends are checked as written, so a huge one is refused and never wraps.)
      json lo = kind == "int_uniform" ? json::parse(arg[0].dump()) : json(p.low);
      json hi = kind == "int_uniform" ? json::parse(arg[1].dump()) : json(p.high);
      BATCHLAB_RETURN_IF_ERROR(ValidateConfigValue(p.path, lo, awhere + "[0]", spec->user_program));
      BATCHLAB_RETURN_IF_ERROR(ValidateConfigValue(p.path, hi, awhere + "[1]", spec->user_program));
      // A free-form field (params.*, a user program's model/data) has no range of its own: the
      // draw needs ends that a double holds exactly.
      if (kind == "int_uniform" && (std::fabs(p.low) > static_cast<double>(kMaxSpecInteger) ||
                                    std::fabs(p.high) > static_cast<double>(kMaxSpecInteger))) {
        return Bad(awhere, fmt::format("int_uniform ends must lie within +-{} (2^53 - 1)",
                                       kMaxSpecInteger));
      }
    } else {
      return Bad(where + "." + kind,
                 "unknown distribution; allowed: uniform, log_uniform, int_uniform, choice");
    }
    paths->emplace_back(p.path, where);
    spec->random.params.push_back(std::move(p));
  }
  return OkStatus();
}

Status ParseConstraints(const ordered_json& c, Spec* spec) {
  if (!c.is_array()) return Bad("constraints", "is not an array of {field, op, value|value_of}");
  static const std::set<std::string> kOps = {"<", "<=", ">", ">=", "==", "!="};
  for (size_t i = 0; i < c.size(); ++i) {
    std::string where = fmt::format("constraints[{}]", i);
    const auto& e = c[i];
    if (!e.is_object()) return Bad(where, "is not an object {field, op, value|value_of}");
    BATCHLAB_RETURN_IF_ERROR(OnlyKeys(e, where, {"field", "op", "value", "value_of", "scale"}));
    Constraint k;
    k.label = where;
    if (!e.contains("field")) return Bad(where + ".field", "is missing");
    BATCHLAB_ASSIGN_OR_RETURN(k.field, String(e["field"], where + ".field"));
    if (!e.contains("op")) return Bad(where + ".op", "is missing");
    BATCHLAB_ASSIGN_OR_RETURN(k.op, String(e["op"], where + ".op"));
    if (!kOps.count(k.op)) {
      return Bad(where + ".op",
                 fmt::format("{} is not one of <, <=, >, >=, ==, !=", json(k.op).dump()));
    }
    if (e.contains("value") == e.contains("value_of")) {
      return Bad(where, "needs exactly one of \"value\" (a literal) or \"value_of\"");
    }
    if (e.contains("value")) {
      k.value = json::parse(e["value"].dump());
      if (!k.value.is_number() && !k.value.is_string()) {
        return Bad(where + ".value", fmt::format("{} is not a number or string", k.value.dump()));
      }
    } else {
      BATCHLAB_ASSIGN_OR_RETURN(k.value_of, String(e["value_of"], where + ".value_of"));
    }
    if (e.contains("scale")) {
      BATCHLAB_ASSIGN_OR_RETURN(k.scale, Number(e["scale"], where + ".scale", 0, kMaxSpecNumber));
    }
    spec->constraints.push_back(std::move(k));
  }
  return OkStatus();
}

Status ParseSeeds(const ordered_json& doc, Spec* spec) {
  if (doc.contains("seeds") && doc.contains("repeats")) {
    return Bad("repeats",
               "give either \"seeds\" (a list) or \"repeats\" (with \"seed\"), not both");
  }
  if (doc.contains("seeds")) {
    const auto& s = doc["seeds"];
    if (!s.is_array() || s.empty()) return Bad("seeds", "is not a non-empty array of integers");
    spec->seeds.clear();
    std::set<long long> seen;
    for (size_t i = 0; i < s.size(); ++i) {
      BATCHLAB_ASSIGN_OR_RETURN(long long v, Integer(s[i], fmt::format("seeds[{}]", i), 0));
      if (!seen.insert(v).second) return Bad(fmt::format("seeds[{}]", i), "repeats a seed");
      spec->seeds.push_back(v);
    }
  } else {
    long long first = 1, repeats = 1;
    if (doc.contains("seed")) {
      BATCHLAB_ASSIGN_OR_RETURN(first, Integer(doc["seed"], "seed", 0));
    }
    if (doc.contains("repeats")) {
      BATCHLAB_ASSIGN_OR_RETURN(repeats,
                                Integer(doc["repeats"], "repeats", 1, kMaxPointsEnumerated));
    }
    if (first > kMaxSpecInteger - (repeats - 1)) {
      return Bad("seed", fmt::format("seeds {} .. {} + {} - 1 go past {}, the largest seed", first,
                                     first, repeats, kMaxSpecInteger));
    }
    spec->seeds.clear();
    for (long long i = 0; i < repeats; ++i) spec->seeds.push_back(first + i);
  }
  if (doc.contains("seed") && doc.contains("seeds")) {
    return Bad("seed", "\"seed\" goes with \"repeats\"; with \"seeds\" list every seed");
  }
  return OkStatus();
}

}  // namespace batchlab::orchestrator::spec_parsing
