#include "orchestrator/config_schema.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "orchestrator/json_guard.h"
#include "orchestrator/spec_bounds.h"

namespace batchlab::orchestrator {
namespace {

using nlohmann::json;

// kAnyObject: a free-form JSON object (the user's `params`; `model` and `data` of a user program)
// whose contents batchlab passes through without looking.
enum class Kind {
  kInt,
  kNumber,
  kString,
  kBool,
  kIntArray,
  kStringArray,
  kObject,
  kObjectOrNull,
  kAnyObject
};

struct Field {
  std::string name;
  Kind kind = Kind::kInt;
  double min = -kMaxSpecNumber;
  bool min_exclusive = false;
  double max = kMaxSpecNumber;
  bool max_exclusive = false;
  std::vector<std::string> allowed;  // for kString: the only values accepted
  std::vector<Field> children;       // for kObject / kObjectOrNull
  json default_value;                // null = no default (required, or optional and absent)
};

Field Make(std::string name, Kind kind) {
  Field f;
  f.name = std::move(name);
  f.kind = kind;
  return f;
}
Field Int(std::string name, double min, json def = nullptr,
          double max = static_cast<double>(kMaxSpecInteger)) {
  Field f = Make(std::move(name), Kind::kInt);
  f.min = min;
  f.max = max;
  f.default_value = std::move(def);
  return f;
}
Field Num(std::string name, double min, bool min_excl, json def = nullptr) {
  Field f = Make(std::move(name), Kind::kNumber);
  f.min = min;
  f.min_exclusive = min_excl;
  f.default_value = std::move(def);
  return f;
}
Field Fraction(std::string name, json def = nullptr) {  // [0, 1)
  Field f = Num(std::move(name), 0, false, std::move(def));
  f.max = 1;
  f.max_exclusive = true;
  return f;
}
Field Enum(std::string name, std::vector<std::string> allowed, json def = nullptr) {
  Field f = Make(std::move(name), Kind::kString);
  f.allowed = std::move(allowed);
  f.default_value = std::move(def);
  return f;
}
Field Str(std::string name) { return Make(std::move(name), Kind::kString); }
Field Bool(std::string name, json def = nullptr) {
  Field f = Make(std::move(name), Kind::kBool);
  f.default_value = std::move(def);
  return f;
}
Field IntArray(std::string name, double min, json def = nullptr) {
  Field f = Make(std::move(name), Kind::kIntArray);
  f.min = min;
  f.max = static_cast<double>(kMaxSpecInteger);
  f.default_value = std::move(def);
  return f;
}
Field StrArray(std::string name) { return Make(std::move(name), Kind::kStringArray); }
Field AnyObject(std::string name) { return Make(std::move(name), Kind::kAnyObject); }
Field Obj(std::string name, std::vector<Field> children, Kind kind = Kind::kObject) {
  Field f = Make(std::move(name), kind);
  f.children = std::move(children);
  return f;
}

// The one table. Keep in step with docs/protocol.md, docs/spec.md and sweeps/spec.schema.json.
const Field& Root() {
  static const Field root = Obj(
      "",
      {
          Int("nodes", 1, 1, kMaxNodes),
          Int("ranks_per_node", 1, 1, kMaxRanksPerNode),
          Int("batch_size", 1),
          Int("accumulation", 1, 1, kMaxAccumulation),
          Obj("data",
              {Enum("name", {"fashion-mnist", "synthetic-linear", "idx", "csv"}, "fashion-mnist"),
               Str("path"), Str("test_path"), Int("label_column", -1),
               Enum("task", {"classification", "regression"}), Int("samples", 1),
               Int("test_samples", 0), Int("features", 1), Num("noise", 0, false), Int("seed", 0)}),
          Obj("model",
              {Enum("name", {"logreg", "mlp", "cnn"}, "mlp"),
               IntArray("hidden", 1, json::array({128})), IntArray("channels", 1), Bool("bias")}),
          Obj("optimizer",
              {Enum("name", {"sgd", "momentum", "nesterov", "adam", "adamw", "lars", "lamb"},
                    "momentum"),
               Fraction("momentum", 0.9), Num("weight_decay", 0, false, 0.0), Fraction("beta1"),
               Fraction("beta2"), Num("eps", 0, true), Num("trust_coefficient", 0, true),
               Bool("exclude_bias_and_norm")}),
          Obj("lr", {Num("base", 0, true, 0.1), Int("base_batch_size", 1, 256),
                     Enum("rule", {"none", "linear", "sqrt"}, "none"), Int("warmup_steps", 0, 0),
                     Num("warmup_epochs", 0, false),
                     Enum("schedule", {"constant", "step", "cosine", "poly"}, "constant"),
                     IntArray("milestones", 0), Num("gamma", 0, true), Num("power", 0, true),
                     Num("final_lr_fraction", 0, false)}),
          Obj("budget", {Num("epochs", 0, true), Int("steps", 1), Int("samples", 1),
                         Num("seconds", 0, true)}),
          Obj("eval", {Int("every_steps", 0, 0), Int("subset", 0, 0)}),
          Obj("target",
              {Enum("metric", {"test_accuracy", "test_loss", "loss"}),
               Enum("op", {">=", "<=", ">", "<"}), Num("value", -kMaxSpecNumber, false)},
              Kind::kObjectOrNull),
          Obj("comm",
              {Enum("backend", {"mpi", "gloo", "nccl"}, "mpi"), Num("bucket_mb", 0, true, 25),
               Str("rendezvous"), Int("timeout_seconds", 1, 300, kMaxSeconds)}),
          Obj("gns", {Int("every_steps", 0, 1)}),
          Num("divergence_factor", 1, true),
          Int("threads", 1, 1, kMaxThreads),
          Enum("precision", {"fp32", "bf16", "fp16"}, "fp32"),
          Enum("mode", {"train", "noop"}, "train"),
          // The user's own training program (program.h); absent: the built-in batchlab-runner.
          Obj("program", {StrArray("command"), Enum("launch", {"mpirun", "torchrun"}),
                          Bool("validate"), Str("workdir")}),
          AnyObject("params"),
      });
  return root;
}

const Field* FindChild(const Field& parent, const std::string& name) {
  for (const Field& c : parent.children) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::string AllowedNames(const Field& parent) {
  std::string out;
  for (const Field& c : parent.children) out += (out.empty() ? "" : ", ") + c.name;
  return out;
}

std::string Quoted(const std::vector<std::string>& values) {
  std::string out;
  for (const auto& v : values) out += (out.empty() ? "\"" : ", \"") + v + "\"";
  return out;
}

std::string RangeText(const Field& f) {
  auto text = [&](double x) {
    return f.kind == Kind::kNumber ? fmt::format("{}", x)
                                   : fmt::format("{}", static_cast<long long>(x));
  };
  return fmt::format("{} {} and {} {}", f.min_exclusive ? ">" : ">=", text(f.min),
                     f.max_exclusive ? "<" : "<=", text(f.max));
}

bool InRange(const Field& f, double v) {
  if (f.min_exclusive ? !(v > f.min) : !(v >= f.min)) return false;
  if (f.max_exclusive ? !(v < f.max) : !(v <= f.max)) return false;
  return true;
}

Status Invalid(const std::string& where, const json& value, const std::string& what) {
  return InvalidArgumentError(fmt::format("{}: {} {}", where, value.dump(), what));
}

Status CheckLeafInt(const Field& f, const json& v, const std::string& where) {
  if (!v.is_number_integer()) {
    if (f.min == 1) return Invalid(where, v, "is not a positive integer");
    return Invalid(where, v, "is not an integer");
  }
  // As a double, so an integer beyond int64 (JSON allows it) is out of range, never wrapped.
  const double x = v.get<double>();
  if (f.min == 1 && x < 1) return Invalid(where, v, "is not a positive integer");
  if (!InRange(f, x)) return Invalid(where, v, "is out of range: must be " + RangeText(f));
  return OkStatus();
}

Status Check(const Field& f, const json& v, const std::string& where) {
  switch (f.kind) {
    case Kind::kInt:
      return CheckLeafInt(f, v, where);
    case Kind::kNumber:
      if (!v.is_number()) return Invalid(where, v, "is not a number");
      if (!InRange(f, v.get<double>())) {
        return Invalid(where, v, "is out of range: must be " + RangeText(f));
      }
      return OkStatus();
    case Kind::kString:
      if (!v.is_string()) return Invalid(where, v, "is not a string");
      if (!f.allowed.empty()) {
        for (const auto& a : f.allowed) {
          if (v.get<std::string>() == a) return OkStatus();
        }
        return Invalid(where, v, "is not one of " + Quoted(f.allowed));
      }
      return OkStatus();
    case Kind::kBool:
      if (!v.is_boolean()) return Invalid(where, v, "is not true or false");
      return OkStatus();
    case Kind::kIntArray: {
      if (!v.is_array()) return Invalid(where, v, "is not an array of positive integers");
      for (size_t i = 0; i < v.size(); ++i) {
        Field elem = f;
        elem.kind = Kind::kInt;
        BATCHLAB_RETURN_IF_ERROR(CheckLeafInt(elem, v[i], fmt::format("{}[{}]", where, i)));
      }
      return OkStatus();
    }
    case Kind::kStringArray: {
      if (!v.is_array()) return Invalid(where, v, "is not an array of strings");
      for (size_t i = 0; i < v.size(); ++i) {
        if (!v[i].is_string()) {
          return Invalid(fmt::format("{}[{}]", where, i), v[i], "is not a string");
        }
      }
      return OkStatus();
    }
    case Kind::kAnyObject:
      if (!v.is_object()) return Invalid(where, v, "is not an object");
      return OkStatus();
    case Kind::kObjectOrNull:
      if (v.is_null()) return OkStatus();
      [[fallthrough]];
    case Kind::kObject: {
      if (!v.is_object()) {
        return Invalid(
            where, v,
            f.kind == Kind::kObjectOrNull ? "is not an object or null" : "is not an object");
      }
      for (auto it = v.begin(); it != v.end(); ++it) {
        std::string sub = JoinPath(where, it.key());
        const Field* child = FindChild(f, it.key());
        if (child == nullptr) {
          return InvalidArgumentError(
              fmt::format("{}: unknown field; allowed here: {}", sub, AllowedNames(f)));
        }
        BATCHLAB_RETURN_IF_ERROR(Check(*child, it.value(), sub));
      }
      return OkStatus();
    }
  }
  return InternalError("unreachable");
}

void CollectPaths(const Field& f, const std::string& prefix, std::vector<std::string>* out) {
  for (const Field& c : f.children) {
    std::string p = prefix.empty() ? c.name : prefix + "." + c.name;
    out->push_back(p);
    if (c.kind == Kind::kObject || c.kind == Kind::kObjectOrNull) CollectPaths(c, p, out);
  }
}

json DefaultsOf(const Field& f) {
  json out = json::object();
  for (const Field& c : f.children) {
    if (c.kind == Kind::kObject) {
      json sub = DefaultsOf(c);
      if (!sub.empty()) out[c.name] = sub;
    } else if (c.kind == Kind::kObjectOrNull) {
      out[c.name] = nullptr;
    } else if (!c.default_value.is_null()) {
      out[c.name] = c.default_value;
    }
  }
  return out;
}

}  // namespace

bool IsDerivedField(const std::string& p) {
  return p == "run_id" || p == "sweep" || p == "attempt" || p == "seed" || p == "world_size" ||
         p == "local_batch_size" || p == "micro_batch_size" || p == "metrics_path";
}

bool IsBuiltinRunnerField(const std::string& top_level_name) {
  return top_level_name == "model" || top_level_name == "data";
}

Status ValidateConfigValue(const std::string& dotted_path, const json& value,
                           const std::string& where, bool user_program) {
  if (IsDerivedField(dotted_path)) {
    return InvalidArgumentError(fmt::format(
        "{}: \"{}\" is derived by the orchestrator and cannot be set (see docs/spec.md)", where,
        dotted_path));
  }
  const Field* f = &Root();
  std::string walked;
  size_t start = 0;
  while (true) {
    size_t dot = dotted_path.find('.', start);
    std::string part =
        dotted_path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const Field* child = FindChild(*f, part);
    if (child == nullptr) {
      return InvalidArgumentError(
          fmt::format("{}: {} is not a config field; allowed {}: {}", where, Escaped(dotted_path),
                      walked.empty() ? "at the top level" : "under " + walked, AllowedNames(*f)));
    }
    const bool top = walked.empty();
    walked = walked.empty() ? part : walked + "." + part;
    f = child;
    // The user's own fields: anything goes below `params` (and below `model` / `data` when the
    // spec runs a user program), but a path into them must still be all objects (SetPath).
    if (f->kind == Kind::kAnyObject || (top && user_program && IsBuiltinRunnerField(part))) {
      if (dot == std::string::npos && !value.is_object()) {
        return Invalid(where, value, "is not an object");
      }
      return OkStatus();
    }
    if (dot == std::string::npos) break;
    if (f->kind != Kind::kObject && f->kind != Kind::kObjectOrNull) {
      return InvalidArgumentError(fmt::format("{}: \"{}\" is not an object, so {} has no fields",
                                              where, walked, Escaped(dotted_path)));
    }
    start = dot + 1;
  }
  return Check(*f, value, where);
}

Status ValidateConfigObject(const json& base, const std::string& where, bool user_program) {
  if (!base.is_object()) return Invalid(where, base, "is not an object");
  for (auto it = base.begin(); it != base.end(); ++it) {
    std::string sub = JoinPath(where, it.key());
    if (IsDerivedField(it.key())) {
      return InvalidArgumentError(
          fmt::format("{}: derived by the orchestrator and cannot be set (see docs/spec.md)", sub));
    }
    const Field* child = FindChild(Root(), it.key());
    if (child == nullptr) {
      return InvalidArgumentError(
          fmt::format("{}: unknown field; allowed here: {}", sub, AllowedNames(Root())));
    }
    if (user_program && IsBuiltinRunnerField(it.key())) {
      if (!it.value().is_object()) return Invalid(sub, it.value(), "is not an object");
      continue;  // the user program's own model/data description
    }
    BATCHLAB_RETURN_IF_ERROR(Check(*child, it.value(), sub));
  }
  return OkStatus();
}

json ConfigDefaults() {
  json d = DefaultsOf(Root());
  d["budget"] = json{{"epochs", 1}};  // a budget is replaced as a whole, never merged
  d.erase("model");  // BuiltinRunnerDefaults(): only runs of the built-in runner get these
  d.erase("data");
  return d;
}

json BuiltinRunnerDefaults() {
  json d = DefaultsOf(Root());
  return {{"model", d["model"]}, {"data", d["data"]}};
}

Status ValidateBuiltinRunnerFields(const json& config, const std::string& where_prefix) {
  for (const char* name : {"model", "data"}) {
    auto it = config.find(name);
    if (it == config.end()) continue;
    const std::string where = where_prefix.empty() ? name : where_prefix + "." + name;
    BATCHLAB_RETURN_IF_ERROR(Check(*FindChild(Root(), name), *it, where));
  }
  return OkStatus();
}

std::vector<std::string> SettableConfigPaths() {
  std::vector<std::string> out;
  CollectPaths(Root(), "", &out);
  return out;
}

StatusOr<long long> DatasetSize(const json& data) {
  if (data.contains("samples")) return data["samples"].get<long long>();
  std::string name = data.value("name", "fashion-mnist");
  if (name == "fashion-mnist") return 60000LL;
  return InvalidArgumentError(
      fmt::format("the training set size of data.name \"{}\" is unknown; set data.samples", name));
}

}  // namespace batchlab::orchestrator
