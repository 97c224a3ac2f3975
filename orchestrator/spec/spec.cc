// A spec parsed and validated whole: its top-level fields, then each section (spec_sections.h),
// then the checks across sections; the file loader (see spec.h).
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
#include "orchestrator/spec/spec_reader.h"
#include "orchestrator/spec/spec_sections.h"
#include "results/number_format.h"

namespace batchlab::orchestrator {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;
using spec_parsing::Bad;
using spec_parsing::CheckPathsDisjoint;
using spec_parsing::Integer;
using spec_parsing::OnlyKeys;
using spec_parsing::ParseAxes;
using spec_parsing::ParseConstraints;
using spec_parsing::ParseLaunch;
using spec_parsing::ParseLrSearch;
using spec_parsing::ParseRandom;
using spec_parsing::ParseResources;
using spec_parsing::ParseSeeds;
using spec_parsing::ParseSlurm;
using spec_parsing::String;
using spec_parsing::SweptPaths;

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
                                const SweptPaths& paths) {
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
  SweptPaths paths;
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
  if (doc.contains("stall") && doc["stall"].is_boolean() && !doc["stall"].get<bool>()) {
    spec->stall_note = "the stall rule is off (\"stall\": false)";
  } else if (!doc.contains("stall") && doc.contains("branch")) {
    spec->stall_note = "the stall rule is off: a branch study's runs are not compared with chance";
  } else if (!doc.contains("stall")) {
    SpecStallDefault d = InferStallRule(spec->base);
    if (d.rule) spec->stall = Spec::StallRule{d.rule->first, d.rule->second};
    spec->stall_note = d.note;
  } else {
    const ordered_json& s = doc["stall"];
    if (!s.is_object()) {
      return Bad("stall", "is not an object such as {\"evals\": 5, \"chance\": 0.1}, or false "
                          "(off; default: on where the chance level is known)");
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

SpecStallDefault InferStallRule(const nlohmann::json& base) {
  SpecStallDefault out;
  const char* how = "set \"stall\": {\"evals\": N, \"chance\": C} to stop runs stuck at chance";
  if (!base.contains("target") || !base["target"].is_object()) {
    return out;  // no target: nothing to stall against, nothing to say
  }
  const nlohmann::json& t = base["target"];
  const std::string metric = t.value("metric", "");
  const std::string op = t.value("op", "");
  if (base.contains("program")) {
    out.note = fmt::format(
        "the stall rule is off: the chance level of a user program's {} is not known; {}", metric,
        how);
    return out;
  }
  const std::string data = base.contains("data") && base["data"].is_object()
                               ? base["data"].value("name", "fashion-mnist")
                               : "fashion-mnist";
  if (data != "fashion-mnist") {
    out.note = fmt::format(
        "the stall rule is off: the chance level of data set {} is not known; {}", data, how);
    return out;
  }
  double chance = 0;
  if (metric == "test_accuracy" && (op == ">=" || op == ">")) {
    chance = 0.1;  // 1/10 classes
  } else if (metric == "test_loss" && (op == "<=" || op == "<")) {
    chance = std::log(10.0);  // cross-entropy of a uniform guess over 10 classes
  } else {
    out.note = fmt::format("the stall rule is off: no chance level for a {} {} target; {}",
                           metric, op, how);
    return out;
  }
  out.rule = std::make_pair(kDefaultStallEvals, chance);
  out.note = fmt::format(
      "stall rule on by default: a run whose last {} evaluations of {} were all at chance ({} "
      "on fashion-mnist's 10 classes) or worse is stopped as stalled; \"stall\": false turns it "
      "off",
      kDefaultStallEvals, metric, results::FormatNumber(chance));
  return out;
}

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
