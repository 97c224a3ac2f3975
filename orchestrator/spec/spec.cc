#include "orchestrator/spec/spec.h"

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <boost/filesystem.hpp>

#include "base/closest_name.h"
#include "base/spec_bounds.h"
#include "orchestrator/spec/config_schema.h"
#include "orchestrator/spec/expansion.h"
#include "orchestrator/spec/json_guard.h"
#include "orchestrator/spec/launch_options.h"
#include "orchestrator/spec/run_identity.h"

namespace batchlab::orchestrator {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

Status Bad(const std::string& where, const std::string& what) {
  return InvalidArgumentError(fmt::format("{}: {}", where, what));
}

// Rejects keys of `obj` outside `allowed`, naming the first unknown one.
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

// An integer in [min, max]; values beyond int64 (JSON allows them) never wrap.
StatusOr<long long> Integer(const ordered_json& v, const std::string& where, long long min,
                            long long max = kMaxSpecInteger) {
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

// A finite number in [min, max].
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

// Axis paths must be distinct and none may be a prefix object of another ("lr" vs "lr.base").
Status CheckPathsDisjoint(const std::vector<std::pair<std::string, std::string>>& paths) {
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

Status ParseAxes(const ordered_json& doc, Spec* spec,
                 std::vector<std::pair<std::string, std::string>>* paths) {
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

// `lr_search` (lr_search.h): validated, and its coarse grid added as one more axis, so the first
// round is ordinary expansion; later rounds are added by the executor as results arrive.
Status ParseLrSearch(const ordered_json& doc, Spec* spec,
                     std::vector<std::pair<std::string, std::string>>* paths) {
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
                   std::vector<std::pair<std::string, std::string>>* paths) {
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

Status ParseResources(const ordered_json& r, Resources* out) {
  if (!r.is_object()) return Bad("resources", "is not an object");
  BATCHLAB_RETURN_IF_ERROR(
      OnlyKeys(r, "resources",
               {"slots_per_rank", "timeout_seconds", "retries", "retry_backoff_seconds",
                "expected_seconds", "gpus_per_rank"}));
  if (r.contains("slots_per_rank")) {
    BATCHLAB_ASSIGN_OR_RETURN(
        long long v, Integer(r["slots_per_rank"], "resources.slots_per_rank", 1, kMaxThreads));
    out->slots_per_rank = static_cast<int>(v);
  }
  if (r.contains("timeout_seconds")) {
    BATCHLAB_ASSIGN_OR_RETURN(
        out->timeout_seconds,
        Number(r["timeout_seconds"], "resources.timeout_seconds", 0, kMaxSeconds));
  }
  if (r.contains("retries")) {
    BATCHLAB_ASSIGN_OR_RETURN(long long v,
                              Integer(r["retries"], "resources.retries", 0, kMaxRetries));
    out->retries = static_cast<int>(v);
  }
  if (r.contains("retry_backoff_seconds")) {
    BATCHLAB_ASSIGN_OR_RETURN(
        out->retry_backoff_seconds,
        Number(r["retry_backoff_seconds"], "resources.retry_backoff_seconds", 0, kMaxSeconds));
  }
  if (r.contains("expected_seconds")) {
    BATCHLAB_ASSIGN_OR_RETURN(
        out->expected_seconds,
        Number(r["expected_seconds"], "resources.expected_seconds", 0, kMaxSeconds));
  }
  if (r.contains("gpus_per_rank")) {
    const ordered_json& g = r["gpus_per_rank"];
    if (!g.is_number_integer() && g.is_number() && g.get<double>() >= 0) {
      return Bad("resources.gpus_per_rank",
                 fmt::format("{} is not a whole number of GPUs: give each rank 0, 1, 2, ... GPUs "
                             "(GPUs are not shared between ranks)",
                             g.dump()));
    }
    BATCHLAB_ASSIGN_OR_RETURN(long long v,
                              Integer(g, "resources.gpus_per_rank", 0, kMaxGpusPerRank));
    out->gpus_per_rank = static_cast<int>(v);
  }
  return OkStatus();
}

Status ParseLaunch(const ordered_json& l, LaunchSettings* out) {
  if (!l.is_object()) return Bad("launch", "is not an object {env, mpirun_args}");
  BATCHLAB_RETURN_IF_ERROR(OnlyKeys(l, "launch", {"env", "mpirun_args"}));
  if (l.contains("env")) {
    if (!l["env"].is_object()) return Bad("launch.env", "is not an object of \"NAME\": \"value\"");
    for (auto it = l["env"].begin(); it != l["env"].end(); ++it) {
      BATCHLAB_ASSIGN_OR_RETURN(out->env[it.key()],
                                String(it.value(), JoinPath("launch.env", it.key())));
    }
    BATCHLAB_RETURN_IF_ERROR(CheckEnvironment(out->env, "launch.env"));
  }
  if (l.contains("mpirun_args")) {
    BATCHLAB_ASSIGN_OR_RETURN(out->mpirun_args, StringList(l["mpirun_args"], "launch.mpirun_args"));
    BATCHLAB_RETURN_IF_ERROR(CheckMpirunArgs(out->mpirun_args, "launch.mpirun_args"));
  }
  return OkStatus();
}

Status ParseSlurm(const ordered_json& s, SlurmSettings* out) {
  if (!s.is_object()) return Bad("slurm", "is not an object");
  BATCHLAB_RETURN_IF_ERROR(
      OnlyKeys(s, "slurm",
               {"partition", "time_limit_minutes", "cpus_per_task", "signal_seconds",
                "sbatch_args"}));
  if (s.contains("partition")) {
    BATCHLAB_ASSIGN_OR_RETURN(out->partition, String(s["partition"], "slurm.partition"));
  }
  if (s.contains("time_limit_minutes")) {
    BATCHLAB_ASSIGN_OR_RETURN(
        long long v,
        Integer(s["time_limit_minutes"], "slurm.time_limit_minutes", 1, kMaxSlurmMinutes));
    out->time_limit_minutes = static_cast<int>(v);
  }
  if (s.contains("signal_seconds")) {
    BATCHLAB_ASSIGN_OR_RETURN(long long v,
                              Integer(s["signal_seconds"], "slurm.signal_seconds", 0, 65535));
    out->signal_seconds = static_cast<int>(v);
  }
  if (s.contains("cpus_per_task")) {
    BATCHLAB_ASSIGN_OR_RETURN(long long v,
                              Integer(s["cpus_per_task"], "slurm.cpus_per_task", 1, kMaxThreads));
    out->cpus_per_task = static_cast<int>(v);
  }
  if (s.contains("sbatch_args")) {
    BATCHLAB_ASSIGN_OR_RETURN(out->sbatch_args, StringList(s["sbatch_args"], "slurm.sbatch_args"));
    BATCHLAB_RETURN_IF_ERROR(CheckSbatchArgs(out->sbatch_args, "slurm.sbatch_args"));
  }
  return OkStatus();
}

// True if base or any swept path sets `program` (the spec runs a program of its own somewhere).
bool NamesProgram(const ordered_json& doc) {
  auto is_program = [](const std::string& path) {
    return path == "program" || path.rfind("program.", 0) == 0;
  };
  auto any_key = [&](const ordered_json& obj) {
    if (!obj.is_object()) return false;
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      if (is_program(it.key())) return true;
    }
    return false;
  };
  if (doc.contains("base") && doc["base"].is_object() && doc["base"].contains("program")) {
    return true;
  }
  if (doc.contains("axes") && any_key(doc["axes"])) return true;
  if (doc.contains("zip") && doc["zip"].is_array()) {
    for (const auto& group : doc["zip"]) {
      if (any_key(group)) return true;
    }
  }
  return doc.contains("random") && doc["random"].is_object() && doc["random"].contains("params") &&
         any_key(doc["random"]["params"]);
}

// A swept `params.*` path must name a parameter that base.params declares (with its default):
// a typo would otherwise quietly add a second parameter.
Status CheckSweptParamsDeclared(const json& base,
                                const std::vector<std::pair<std::string, std::string>>& paths) {
  for (const auto& [path, where] : paths) {
    if (path.rfind("params.", 0) != 0) continue;
    if (FindPath(base, path) == nullptr) {
      const std::string name = path.substr(7);
      return Bad(where, fmt::format("{} is not in base.params; declare it there with its "
                                    "default value, e.g. \"base\": {{\"params\": {{{}: "
                                    "...}}}}",
                                    Escaped(path), Escaped(name.substr(0, name.find('.')))));
    }
  }
  return OkStatus();
}

Status ParseDocument(const ordered_json& doc, Spec* spec) {
  if (!doc.is_object()) return Bad("(top level)", "a spec is a JSON object");
  BATCHLAB_RETURN_IF_ERROR(OnlyKeys(
      doc, "",
      {"$schema", "name", "description", "base", "axes", "zip", "random", "constraints", "seeds",
       "repeats", "seed", "max_runs", "resources", "launch", "slurm", "prune", "lr_search",
        "stall", "branch"}));
  if (!doc.contains("name")) return Bad("name", "is missing (the sweep's name)");
  BATCHLAB_ASSIGN_OR_RETURN(spec->name, String(doc["name"], "name"));
  if (spec->name.empty() || spec->name.size() > 64 ||
      spec->name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"
                                   ".-") != std::string::npos ||
      spec->name[0] == '.') {
    return Bad("name", fmt::format("{} is not 1-64 characters of A-Z a-z 0-9 _ . - (not "
                                   "starting with .)",
                                   json(spec->name).dump()));
  }
  if (doc.contains("description")) {
    BATCHLAB_ASSIGN_OR_RETURN(spec->description, String(doc["description"], "description"));
  }
  spec->user_program = NamesProgram(doc);
  if (doc.contains("base")) {
    spec->base = json::parse(doc["base"].dump());
    BATCHLAB_RETURN_IF_ERROR(ValidateConfigObject(spec->base, "base", spec->user_program));
  }
  std::vector<std::pair<std::string, std::string>> paths;
  BATCHLAB_RETURN_IF_ERROR(ParseAxes(doc, spec, &paths));
  if (doc.contains("random")) BATCHLAB_RETURN_IF_ERROR(ParseRandom(doc["random"], spec, &paths));
  if (doc.contains("lr_search")) BATCHLAB_RETURN_IF_ERROR(ParseLrSearch(doc, spec, &paths));
  BATCHLAB_RETURN_IF_ERROR(CheckPathsDisjoint(paths));
  if (doc.contains("constraints")) {
    BATCHLAB_RETURN_IF_ERROR(ParseConstraints(doc["constraints"], spec));
  }
  BATCHLAB_RETURN_IF_ERROR(ParseSeeds(doc, spec));
  if (doc.contains("max_runs")) {
    BATCHLAB_ASSIGN_OR_RETURN(spec->max_runs,
                              Integer(doc["max_runs"], "max_runs", 1, kMaxPointsEnumerated));
  }
  if (doc.contains("resources")) {
    BATCHLAB_RETURN_IF_ERROR(ParseResources(doc["resources"], &spec->resources));
  }
  if (doc.contains("launch")) BATCHLAB_RETURN_IF_ERROR(ParseLaunch(doc["launch"], &spec->launch));
  if (doc.contains("slurm")) BATCHLAB_RETURN_IF_ERROR(ParseSlurm(doc["slurm"], &spec->slurm));
  if (spec->resources.gpus_per_rank > 0 && spec->launch.env.count("CUDA_VISIBLE_DEVICES")) {
    return Bad("launch.env.CUDA_VISIBLE_DEVICES",
               "is set by batchlab for a run with resources.gpus_per_rank > 0 (to the GPUs it "
               "hands the run); remove it from launch.env, or limit the GPUs with `--gpus N`");
  }
  if (doc.contains("stall")) {
    const ordered_json& s = doc["stall"];
    if (!s.is_object()) {
      return Bad("stall", "is not an object such as {\"evals\": 5, \"chance\": 0.1}");
    }
    BATCHLAB_RETURN_IF_ERROR(OnlyKeys(s, "stall", {"evals", "chance"}));
    if (!s.contains("evals")) {
      return Bad("stall.evals", "is missing: the number of evaluations in a row at the chance "
                                "level or worse that stop a run, e.g. 5");
    }
    BATCHLAB_ASSIGN_OR_RETURN(const long long evals, Integer(s["evals"], "stall.evals", 2, 1000));
    if (!s.contains("chance") || !s["chance"].is_number() ||
        !std::isfinite(s["chance"].get<double>())) {
      return Bad("stall.chance",
                 "is missing or not a number: the target metric's chance level, e.g. 0.1 for "
                 "test_accuracy on 10 classes");
    }
    spec->stall = Spec::StallRule{static_cast<int>(evals), s["chance"].get<double>()};
  }
  if (doc.contains("branch")) {
    BATCHLAB_RETURN_IF_ERROR(ParseBranchStudy(doc["branch"], &spec->branch));
    if (spec->lr_search.enabled) {
      return Bad("branch", "a branch study cannot be combined with lr_search yet; tune the "
                           "trunk's LR first, then branch with lr_rule sqrt or linear");
    }
  }
  if (doc.contains("prune")) {
    if (!doc["prune"].is_boolean()) {
      return Bad("prune", "is not true or false (false turns exact pruning off; default true)");
    }
    spec->prune = doc["prune"].get<bool>();
  }
  BATCHLAB_RETURN_IF_ERROR(CheckSweptParamsDeclared(spec->base, paths));
  // batch_size has no default: it must come from base or an axis.
  bool has_batch = spec->base.contains("batch_size");
  for (const auto& p : paths) has_batch = has_batch || p.first == "batch_size";
  if (!has_batch) {
    return Bad("base.batch_size", "is missing: set it in base or sweep it in axes/zip/random");
  }
  spec->canonical = json::parse(doc.dump());
  spec->canonical.erase("$schema");
  spec->spec_hash = SpecHashOf(spec->canonical);
  return OkStatus();
}

}  // namespace

StatusOr<Spec> ParseSpec(const std::string& text, const std::string& source) {
  Status guard = CheckJsonText(text);
  if (!guard.ok()) return guard.WithContext(source);
  ordered_json doc;
  try {
    doc = ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for 1e999
    std::string what = e.what();
    auto pos = what.find("parse error");
    return InvalidArgumentError(fmt::format("{}: not valid JSON: {}", source,
                                            pos == std::string::npos ? what : what.substr(pos)));
  }
  Spec spec;
  Status s = ParseDocument(doc, &spec);
  if (!s.ok()) return s.WithContext(source);
  return spec;
}

StatusOr<Spec> LoadSpecFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(fmt::format("{}: cannot read the spec file", path));
  // Bounded while reading, not after: a device (/dev/zero), a pipe or a huge file is refused as
  // soon as it passes the limit, whatever its reported size.
  std::string text;
  char chunk[1 << 16];
  while (in.read(chunk, sizeof(chunk)) || in.gcount() > 0) {
    text.append(chunk, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxSpecBytes) {
      return InvalidArgumentError(fmt::format(
          "{}: (top level): the spec is more than the {} bytes a spec may have; pass a JSON spec "
          "file (docs/spec.md)",
          path, kMaxSpecBytes));
    }
  }
  if (in.bad()) return NotFoundError(fmt::format("{}: cannot read the spec file", path));
  BATCHLAB_ASSIGN_OR_RETURN(Spec spec, ParseSpec(text, path));
  spec.source_dir = boost::filesystem::absolute(path).parent_path().lexically_normal().string();
  return spec;
}

}  // namespace batchlab::orchestrator
