// The orchestrator's view of the run config's one declaration (base/config_fields.h). The spec
// parser checks `base`, every axis value and every sampled value against it, so a typo or a wrong
// type is reported with its JSON path before anything runs:
//
//   Status s = ValidateConfigValue("optimizer.name", json("sgdd"), "axes.optimizer.name[1]");
//   // -> axes.optimizer.name[1]: "sgdd" is not one of "sgd", "momentum", ... (INVALID_ARGUMENT)
//
//   nlohmann::json config = ConfigDefaults();      // the defaults every program's run gets
//
// Paths are dotted ("lr.rule"); only leaves and whole objects listed here are accepted.
#ifndef BATCHLAB_ORCHESTRATOR_SPEC_CONFIG_SCHEMA_H_
#define BATCHLAB_ORCHESTRATOR_SPEC_CONFIG_SCHEMA_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace batchlab::orchestrator {

// Fields the orchestrator derives or fills itself; a spec may not set them.
bool IsDerivedField(const std::string& dotted_path);

// Checks that `dotted_path` names a config field a spec may set, and that `value` has its type
// and an allowed value. `where` is the JSON path in the spec used in error messages.
// With `user_program` (the spec runs a program of its own, docs/spec.md), `model` and `data` are
// the program's free-form objects; `params` is free-form always.
Status ValidateConfigValue(const std::string& dotted_path, const nlohmann::json& value,
                           const std::string& where, bool user_program = false);

// Checks a whole `base` object (every key recursively).
Status ValidateConfigObject(const nlohmann::json& base, const std::string& where,
                            bool user_program = false);

// The strict check of a resolved config's `model` and `data` for the built-in runner (for specs
// that mix programs, where the parse-time check had to let them through).
Status ValidateBuiltinRunnerFields(const nlohmann::json& config, const std::string& where_prefix);

// The defaults of the fields every program reads (the study's own: batch_size, lr.*, budget, ...).
// A run of the built-in runner gets config::WithDefaults(config, true) too: the defaults of the
// fields only it reads (model, data, optimizer.beta2, comm, ...), inside given objects as well.
nlohmann::json ConfigDefaults();

// Every dotted leaf path a spec may set (for the JSON Schema and docs/spec.md).
std::vector<std::string> SettableConfigPaths();

// Training samples of a named dataset (fashion-mnist: 60000), or of `data.samples` when set.
StatusOr<long long> DatasetSize(const nlohmann::json& data);

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_SPEC_CONFIG_SCHEMA_H_
