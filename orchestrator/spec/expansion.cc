#include "orchestrator/spec/expansion.h"

#include <cmath>
#include <random>
#include <set>
#include <unordered_set>

#include <fmt/format.h>

#include "base/config_fields.h"
#include "base/run_values.h"
#include "base/spec_bounds.h"
#include "base/target_range.h"
#include "orchestrator/spec/config_schema.h"
#include "orchestrator/spec/run_identity.h"
#include "orchestrator/spec/run_length.h"
#include "results/number_format.h"

namespace batchlab::orchestrator {
namespace {

using nlohmann::json;

// Objects merge key by key; `budget` and `target` are replaced as a whole; leaves replace.
void MergeInto(json& dst, const json& src, bool top) {
  for (auto it = src.begin(); it != src.end(); ++it) {
    bool whole = top && (it.key() == "budget" || it.key() == "target");
    if (!whole && it.value().is_object() && dst.contains(it.key()) && dst[it.key()].is_object()) {
      MergeInto(dst[it.key()], it.value(), false);
    } else {
      dst[it.key()] = it.value();
    }
  }
}

// Fills what `dst` lacks from `defaults`, object by object (values already in `dst` win).
void MergeBeneath(json& dst, const json& defaults) {
  for (auto it = defaults.begin(); it != defaults.end(); ++it) {
    auto have = dst.find(it.key());
    if (have == dst.end()) {
      dst[it.key()] = it.value();
    } else if (have->is_object() && it.value().is_object()) {
      MergeBeneath(*have, it.value());
    }
  }
}

// One point of the cross product before resolution: the swept values and where each came from.
struct Point {
  std::vector<std::pair<std::string, const json*>> values;  // path -> value
  std::map<std::string, std::string> where;                 // path -> spec JSON path
};

double Uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

json Draw(const RandomParam& p, std::mt19937_64& rng) {
  double u = Uniform01(rng);
  switch (p.distribution) {
    case RandomParam::Distribution::kUniform:
      return p.low + u * (p.high - p.low);
    case RandomParam::Distribution::kLogUniform:
      return std::exp(std::log(p.low) + u * (std::log(p.high) - std::log(p.low)));
    case RandomParam::Distribution::kIntUniform: {
      // The spec parser bounds both ends by 2^53 - 1 (kMaxSpecInteger): both are exact in double,
      // the draw is clamped to [lo, hi] and so fits in long long (exact while hi - lo < 2^53).
      const double lo = p.low, hi = p.high;
      const double d = std::min(lo + std::floor(u * (hi - lo + 1.0)), hi);
      return static_cast<long long>(d);
    }
    case RandomParam::Distribution::kChoice: {
      size_t i = static_cast<size_t>(std::floor(u * static_cast<double>(p.choices.size())));
      return p.choices[std::min(i, p.choices.size() - 1)];
    }
  }
  return nullptr;
}

StatusOr<double> ConstraintBound(const Constraint& c, const json& config) {
  double base = 0;
  if (c.value_of == "dataset_size" || c.value_of == "sqrt(dataset_size)") {
    auto n = DatasetSize(config.value("data", json::object()));
    if (!n.ok()) return n.status().WithContext(c.label + ".value_of");
    base =
        c.value_of == "dataset_size" ? static_cast<double>(*n) : std::sqrt(static_cast<double>(*n));
  } else {
    const json* v = FindPath(config, c.value_of);
    if (v == nullptr || !v->is_number()) {
      return InvalidArgumentError(
          fmt::format("{}.value_of: {} is not a numeric config field (or dataset_size, "
                      "sqrt(dataset_size))",
                      c.label, json(c.value_of).dump()));
    }
    base = v->get<double>();
  }
  return base * c.scale;
}

template <typename T>
bool Compare(const T& a, const std::string& op, const T& b) {
  if (op == "<") return a < b;
  if (op == "<=") return a <= b;
  if (op == ">") return a > b;
  if (op == ">=") return a >= b;
  if (op == "==") return a == b;
  return a != b;
}

// True if the point satisfies the constraint.
StatusOr<bool> Satisfies(const Constraint& c, const json& config) {
  const json* field = FindPath(config, c.field);
  if (field == nullptr) {
    return InvalidArgumentError(
        fmt::format("{}.field: {} is not a field of the resolved "
                    "config (see docs/spec.md)",
                    c.label, json(c.field).dump()));
  }
  if (c.value_of.empty() && c.value.is_string()) {
    if (!field->is_string()) {
      return InvalidArgumentError(
          fmt::format("{}.value: compares a string with the non-string "
                      "field {}",
                      c.label, json(c.field).dump()));
    }
    return Compare(field->get<std::string>(), c.op, c.value.get<std::string>());
  }
  if (!field->is_number()) {
    return InvalidArgumentError(
        fmt::format("{}: field {} is not numeric; compare it with a string value", c.label,
                    json(c.field).dump()));
  }
  double bound = 0;
  if (c.value_of.empty()) {
    bound = c.value.get<double>() * c.scale;
  } else {
    BATCHLAB_ASSIGN_OR_RETURN(bound, ConstraintBound(c, config));
  }
  return Compare(field->get<double>(), c.op, bound);
}

double ExpectedSeconds(const Spec& spec, const json& config, int world) {
  if (spec.resources.expected_seconds > 0) return spec.resources.expected_seconds;
  if (config.value("mode", "train") == "noop") return 0.5;
  const json& b = config["budget"];
  if (b.contains("seconds")) return b["seconds"].get<double>() + 2.0;
  // The runner's step count (base/run_values.h's LengthOf); an unknown training set counts as
  // Fashion-MNIST's 60000 samples.
  run_values::RunShape shape = RunShapeOf(config);
  if (shape.train_samples == 0) shape.train_samples = 60000;
  const run_values::RunLength length = run_values::LengthOf(shape);
  const double steps = static_cast<double>(length.total_steps);
  const double samples = static_cast<double>(length.SamplesAfter(length.total_steps));
  // Rough cost model of an MLP step on one core: per-sample compute split over ranks, plus a
  // per-step overhead (optimizer, allreduce), plus process start-up. Only the order matters.
  return 2.0 + samples / world * 4e-5 + steps * 2e-3 * (world > 1 ? 2 : 1);
}

double ScaledLr(const json& config) {
  const json& lr = config["lr"];  // every lr field has a default (base/config_fields.cc)
  const double base = lr["base"].get<double>();
  return run_values::ScaledLr(base, config["batch_size"].get<int64_t>(),
                              lr["base_batch_size"].get<int64_t>(), lr["rule"].get<std::string>())
      .value_or(base);  // an unknown rule is refused by the checks before
}

std::string SourceOf(const Point& p, const std::string& path) {
  auto it = p.where.find(path);
  return it == p.where.end() ? "base." + path : it->second;
}

// Where a run's `program` comes from in the spec, for messages.
std::string ProgramSource(const Point& p) {
  for (const auto& [path, where] : p.where) {
    if (path == "program") return where;
    if (path.rfind("program.", 0) == 0) return where.substr(0, where.rfind('['));
  }
  return "base.program";
}

}  // namespace

std::string ParamsText(const std::map<std::string, std::string>& params,
                       const std::string& separator) {
  std::string out;
  for (const auto& [k, v] : params) out += (out.empty() ? "" : separator) + k + "=" + v;
  return out;
}

const json* FindPath(const json& object, const std::string& dotted_path) {
  const json* cur = &object;
  size_t start = 0;
  while (true) {
    size_t dot = dotted_path.find('.', start);
    std::string part = dotted_path.substr(start, dot == std::string::npos ? dot : dot - start);
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(part);
    if (it == cur->end()) return nullptr;
    cur = &*it;
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

void SetPath(json& object, const std::string& dotted_path, json value) {
  json* cur = &object;
  size_t start = 0;
  while (true) {
    size_t dot = dotted_path.find('.', start);
    std::string part = dotted_path.substr(start, dot == std::string::npos ? dot : dot - start);
    if (dot == std::string::npos) {
      // null for an optional object (batch_schedule, program): the point goes without it.
      const config::Field* field = config::FindField(dotted_path);
      if (value.is_null() && field != nullptr && field->optional_object) {
        cur->erase(part);
        return;
      }
      (*cur)[part] = std::move(value);
      return;
    }
    json& next = (*cur)[part];
    if (!next.is_object()) next = json::object();
    cur = &next;
    start = dot + 1;
  }
}

StatusOr<Plan> ExpandSpec(const Spec& spec, const ExpandOptions& options) {
  Plan plan;
  // Size of the cross product, checked before enumerating anything.
  long double total = 1;
  for (const Axis& a : spec.axes) total *= static_cast<long double>(a.size());
  if (spec.random.count > 0) total *= spec.random.count;
  total *= static_cast<long double>(spec.seeds.size());
  const long long max_runs = options.max_runs.value_or(spec.max_runs);
  if (total > kMaxPointsEnumerated) {
    return InvalidArgumentError(fmt::format(
        "max_runs: the spec expands to {} points, more than batchlab enumerates ({}); "
        "shrink the axes",
        results::FixedNumber(static_cast<double>(total), 0), kMaxPointsEnumerated));
  }
  plan.points = static_cast<long long>(total);

  // Random draws, fixed by the seed: draw d takes one value of every parameter in order.
  std::vector<std::vector<json>> draws;
  std::mt19937_64 rng(spec.random.seed);
  for (int d = 0; d < spec.random.count; ++d) {
    std::vector<json> draw;
    for (const RandomParam& p : spec.random.params) draw.push_back(Draw(p, rng));
    draws.push_back(std::move(draw));
  }

  json defaults = ConfigDefaults();
  MergeInto(defaults, spec.base, true);
  const json program_defaults = config::DefaultsOf("program");
  std::map<std::string, Program> programs;  // program JSON -> resolved
  std::vector<long long> dropped(spec.constraints.size(), 0);
  std::unordered_set<std::string> seen;
  std::vector<size_t> index(spec.axes.size(), 0);
  const size_t n_draws = std::max<size_t>(1, draws.size());

  for (long long point = 0; point < plan.points; ++point) {
    // Decode the point number: seeds fastest, then draws, then the last axis ... first axis.
    long long rest = point;
    const long long seed = spec.seeds[rest % spec.seeds.size()];
    rest /= static_cast<long long>(spec.seeds.size());
    const size_t draw = static_cast<size_t>(rest % static_cast<long long>(n_draws));
    rest /= static_cast<long long>(n_draws);
    for (size_t a = spec.axes.size(); a-- > 0;) {
      index[a] = static_cast<size_t>(rest % static_cast<long long>(spec.axes[a].size()));
      rest /= static_cast<long long>(spec.axes[a].size());
    }

    json config = defaults;
    Point p;
    std::map<std::string, std::string> params;
    for (size_t a = 0; a < spec.axes.size(); ++a) {
      for (const Axis::Column& col : spec.axes[a].columns) {
        const json& v = col.values[index[a]];
        SetPath(config, col.path, v);
        params[col.path] = v.dump();
        p.where[col.path] = fmt::format(
            "{}{}[{}]", spec.axes[a].columns.size() > 1 ? "zip." : "axes.", col.path, index[a]);
      }
    }
    if (!draws.empty()) {
      for (size_t i = 0; i < spec.random.params.size(); ++i) {
        const std::string& path = spec.random.params[i].path;
        SetPath(config, path, draws[draw][i]);
        params[path] = draws[draw][i].dump();
        p.where[path] = "random.params." + path;
      }
    }
    config["seed"] = seed;
    params["seed"] = std::to_string(seed);
    config["sweep"] = spec.name;

    Program program;
    if (config.contains("program")) {
      if (config["program"].is_object()) MergeBeneath(config["program"], program_defaults);
      // The user's program: resolved (and its files checked) once per distinct program.
      const std::string key = config["program"].dump();
      auto known = programs.find(key);
      if (known == programs.end()) {
        BATCHLAB_ASSIGN_OR_RETURN(Program resolved,
                                  ResolveProgram(config, spec.source_dir, ProgramSource(p)));
        known = programs.emplace(key, std::move(resolved)).first;
      }
      program = known->second;
    } else {
      // Every default the built-in runner reads, a given object's own included
      // (comm.straggler.probability): the run id covers them.
      config = config::WithDefaults(std::move(config), /*builtin_runner=*/true);
      if (spec.user_program) {
        Status s = ValidateBuiltinRunnerFields(config, "");
        if (!s.ok()) {
          return s.WithContext(fmt::format(
              "the run with {} uses the built-in runner (no \"program\")", ParamsText(params)));
        }
      }
    }

    if (!config.contains("batch_size")) {
      return InvalidArgumentError("base.batch_size: is missing; set it in base or sweep it");
    }
    if (!config["target"].is_null()) {
      for (const char* k : {"metric", "op", "value"}) {
        if (!config["target"].contains(k)) {
          return InvalidArgumentError(
              fmt::format("{}: target needs \"metric\", \"op\" and \"value\" (missing \"{}\")",
                          SourceOf(p, std::string("target.") + k), k));
        }
      }
      // A target its metric can never meet (test_accuracy >= 80, a percent) would burn every
      // run's whole budget: refused here, before anything runs, unless --force.
      const json& t = config["target"];
      if (!options.allow_unreachable_target && t["metric"].is_string() && t["op"].is_string() &&
          t["value"].is_number()) {
        const std::string metric = t["metric"].get<std::string>();
        const std::string op = t["op"].get<std::string>();
        const double value = t["value"].get<double>();
        if (const std::optional<UnreachableWhy> never = UnreachableTarget(metric, op, value)) {
          const auto whole = p.where.find("target");
          return InvalidArgumentError(fmt::format(
              "{}: target {} {} {}: {}; {}or pass --force to run it anyway (run with {})",
              whole != p.where.end() ? whole->second : SourceOf(p, "target.value"), metric, op,
              value, never->why, never->fix.empty() ? "" : never->fix + ", ",
              ParamsText(params)));
        }
      }
    }
    const long long nodes = config["nodes"].get<long long>();
    const long long rpn = config["ranks_per_node"].get<long long>();
    long long world = 0;
    if (__builtin_mul_overflow(nodes, rpn, &world) || world > kMaxWorldSize) {
      return InvalidArgumentError(fmt::format(
          "{}: world_size = nodes x ranks_per_node = {} x {} is more than {} ranks, the largest "
          "job batchlab launches (run with {})",
          SourceOf(p, "nodes"), nodes, rpn, kMaxWorldSize, ParamsText(params)));
    }
    if (config.value("mode", "train") == "train" && config["budget"].empty()) {
      return InvalidArgumentError(fmt::format(
          "{}: the budget is empty; give at least one of epochs, steps, samples, seconds, e.g. "
          "{{\"epochs\": 1}} (run with {})",
          SourceOf(p, "budget"), ParamsText(params)));
    }
    const long long batch = config["batch_size"].get<long long>();
    const long long accum = config["accumulation"].get<long long>();
    config["world_size"] = world;
    // Real-valued first, so constraints can drop points that would not divide.
    config["local_batch_size"] = static_cast<double>(batch) / static_cast<double>(world);
    config["micro_batch_size"] = static_cast<double>(batch) / static_cast<double>(world * accum);

    bool keep = true;
    for (size_t c = 0; c < spec.constraints.size() && keep; ++c) {
      BATCHLAB_ASSIGN_OR_RETURN(bool ok, Satisfies(spec.constraints[c], config));
      if (!ok) {
        ++dropped[c];
        keep = false;
      }
    }
    if (!keep) continue;
    if (batch % (world * accum) != 0) {
      return InvalidArgumentError(fmt::format(
          "{}: batch_size {} is not divisible by world_size x accumulation = {} x {} (nodes {} x "
          "ranks_per_node {}) for the run with {}; choose batch sizes divisible by {}, or drop "
          "such points with a constraint",
          SourceOf(p, "batch_size"), batch, world, accum, nodes, rpn, ParamsText(params),
          world * accum));
    }
    config["local_batch_size"] = batch / world;
    config["micro_batch_size"] = batch / (world * accum);

    PlannedRun run;
    run.id = RunIdOf(config);
    if (!seen.insert(run.id).second) {
      ++plan.duplicates;
      continue;
    }
    config["run_id"] = run.id;
    run.ordinal = static_cast<int>(plan.runs.size());
    // Both factors are bounded (spec_bounds.h): at most 2^20 x 2^10 slots, an int.
    run.world_size = static_cast<int>(world);
    const long long per_rank = spec.resources.slots_per_rank > 0
                                   ? spec.resources.slots_per_rank
                                   : config["threads"].get<long long>();
    run.slots = static_cast<int>(world * per_rank);
    // At most 2^20 ranks x 2^10 GPUs per rank (spec_bounds.h, spec.cc): an int.
    run.gpus_per_rank = spec.resources.gpus_per_rank;
    run.gpus = static_cast<int>(world * spec.resources.gpus_per_rank);
    run.expected_seconds = ExpectedSeconds(spec, config, static_cast<int>(world));
    run.scaled_lr = ScaledLr(config);
    run.params = std::move(params);
    run.sources = std::move(p.where);
    run.config = std::move(config);
    run.program = std::move(program);
    plan.runs.push_back(std::move(run));
    if (static_cast<long long>(plan.runs.size()) > max_runs) {
      return InvalidArgumentError(fmt::format(
          "max_runs: the spec expands to more than {} runs ({} points before constraints); "
          "raise \"max_runs\" in the spec or pass --max-runs",
          max_runs, plan.points));
    }
  }
  for (size_t c = 0; c < spec.constraints.size(); ++c) {
    plan.dropped.emplace_back(spec.constraints[c].label, dropped[c]);
  }
  if (spec.branch.enabled) {
    BATCHLAB_RETURN_IF_ERROR(AddBranches(spec.branch, &plan));
    if (static_cast<long long>(plan.runs.size()) > max_runs) {
      return InvalidArgumentError(fmt::format(
          "max_runs: the trunks and their branches are {} runs, more than {}; raise \"max_runs\" "
          "in the spec or pass --max-runs",
          plan.runs.size(), max_runs));
    }
  }
  return plan;
}

PlannedRun WithSweptValue(const PlannedRun& run, const std::string& path,
                          const nlohmann::json& value, int ordinal) {
  PlannedRun out = run;
  SetPath(out.config, path, value);
  out.config.erase("run_id");
  out.id = RunIdOf(out.config);
  out.config["run_id"] = out.id;
  out.params[path] = value.dump();
  out.scaled_lr = ScaledLr(out.config);
  out.ordinal = ordinal;
  return out;
}

}  // namespace batchlab::orchestrator
