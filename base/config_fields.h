// The run config's fields, declared once (docs/spec.md "Config fields"; adding a field:
// docs/spec.md "Adding a config field"). Every field of a resolved config (docs/protocol.md) has
// one entry here: its dotted path, type, range or allowed values, default, one-line meaning, and
// who reads it. Everything else is made from this table:
//   - the orchestrator's checks of a spec (base, axes, random) and of each resolved config
//     (config_check.h, used by orchestrator/spec/config_schema.h),
//   - the defaults written into every resolved config, so a run id covers every value a run uses
//     (Defaults below),
//   - `$defs/config` of sweeps/spec.schema.json and the field table of docs/spec.md
//     (config_json_schema.h; `batchlab-config-schema --write` regenerates them, a test compares).
// No LibTorch and no orchestrator code: the runner links it too.
//
//   const config::Field* f = config::FindField("optimizer.beta2");
//   f->default_value;                                       // 0.999
//   nlohmann::json d = config::Defaults(config::Reader::kBuiltinRunner);   // {"model": ...}
#ifndef BATCHLAB_BASE_CONFIG_FIELDS_H_
#define BATCHLAB_BASE_CONFIG_FIELDS_H_

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace batchlab::config {

enum class Type {
  kInt,
  kNumber,
  kString,
  kBool,
  kIntArray,
  kStringArray,
  kObject,        // fields of its own (children)
  kObjectOrNull,  // an object with children, or null (target)
  kAnyObject,     // free-form: passed through unread (params)
};

// Who reads a field. It decides which defaults a run gets: a run of the built-in runner gets every
// default; a run of a user program only those of kEveryProgram fields (its own fields stay its
// own).
enum class Reader {
  kEveryProgram,   // the study's own fields: the orchestrator, batchlab-runner and user programs
  kBuiltinRunner,  // batchlab-runner only
  kOrchestrator,  // derived by the orchestrator (run_id, seed, world_size, ...): a spec may not set
                  // it
};

struct Field {
  std::string name;  // key within its parent object
  std::string path;  // dotted path from the root ("optimizer.beta2"); "" for the root
  Type type = Type::kInt;
  double min = 0;  // numbers and integers (array elements too)
  bool min_exclusive = false;
  double max = 0;
  bool max_exclusive = false;
  // Strings: the only values accepted (empty: any). Integers: names accepted besides a number
  // ("random" for a rank).
  std::vector<std::string> allowed;
  // The value the orchestrator writes when the spec says nothing; nullopt: left out (absent has
  // the meaning `meaning` states). For an object, a default for the object as a whole (budget).
  std::optional<nlohmann::json> default_value;
  std::string meaning;  // one line, for docs/spec.md and the JSON Schema's description
  Reader reader = Reader::kEveryProgram;
  // An object whose presence means something (program): its children's defaults are filled in only
  // when it is present.
  bool optional_object = false;
  // model, data: free-form objects of a user program (the built-in runner's fields otherwise).
  bool users_own_object = false;
  // Must be present whenever its parent object is (target.metric, ...).
  bool required = false;
  std::vector<Field> children;

  bool IsObject() const { return type == Type::kObject || type == Type::kObjectOrNull; }
  const Field* Child(std::string_view child_name) const;
};

// The root object: every field, in documentation order.
const Field& Root();

// The declared field at a dotted path (objects too); nullptr if there is none.
const Field* FindField(std::string_view dotted_path);

// Every field below the root, parents before children, in declaration order.
std::vector<const Field*> AllFields();

// The defaults of the fields `reader` reads, as a partial config (objects nested; `target` null,
// `budget` {"epochs": 1}). Optional objects (program) are left out; DefaultsOf fills them.
nlohmann::json Defaults(Reader reader);

// The defaults of the children of the object field at `object_path` ("program"), every reader.
nlohmann::json DefaultsOf(std::string_view object_path);

// `config` with the defaults of the fields the built-in runner (`builtin_runner`) or every program
// reads filled in where absent; an object with a default of its own (budget, target) is kept as
// given when present.
nlohmann::json WithDefaults(nlohmann::json config, bool builtin_runner);

// The declared default at `path`, for C++ structs that mirror the config, so they state no default
// of their own:   double beta2 = config::Default<double>("optimizer.beta2");
// Throws std::logic_error if `path` has no declared default (a bug; tests construct every struct).
const nlohmann::json& DefaultJson(std::string_view path);
template <class T>
T Default(std::string_view path) {
  return DefaultJson(path).get<T>();
}

}  // namespace batchlab::config

#endif  // BATCHLAB_BASE_CONFIG_FIELDS_H_
