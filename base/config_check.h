// Checks JSON against the run config's declaration (config_fields.h): unknown fields, types, ranges
// and allowed values, each error naming the JSON path and what is allowed there. The orchestrator
// checks specs and resolved configs with it; batchlab-runner checks the config it is given.
//
//   Status s = config::CheckValue("optimizer.name", json("sgdd"), "axes.optimizer.name[1]", {});
//   // -> axes.optimizer.name[1]: "sgdd" is not one of "sgd", "momentum", ... (INVALID_ARGUMENT)
//   Status t = config::CheckObject(resolved, "", {false, /*derived_allowed=*/true, true});
#ifndef BATCHLAB_BASE_CONFIG_CHECK_H_
#define BATCHLAB_BASE_CONFIG_CHECK_H_

#include <string>

#include <nlohmann/json.hpp>

#include "base/config_fields.h"
#include "base/status.h"

namespace batchlab::config {

struct CheckOptions {
  // The run is a user program's: `model` and `data` are its own free-form objects.
  bool user_program = false;
  // A resolved config: the derived fields (run_id, seed, world_size, ...) may be present. A spec
  // may not set them.
  bool derived_allowed = false;
  // A whole resolved config: a required field (target.metric, ...) must be present when its
  // object is. A spec's base is partial (the rest may come from axes).
  bool complete = false;
};

// Checks that `dotted_path` names a field (a path into a free-form object is fine) and that
// `value` fits it. `where` is the JSON path used in messages.
Status CheckValue(const std::string& dotted_path, const nlohmann::json& value,
                  const std::string& where, const CheckOptions& options);

// Checks every key of a (partial) config object, recursively. `where` prefixes the paths ("base";
// "" for a whole config).
Status CheckObject(const nlohmann::json& config, const std::string& where,
                   const CheckOptions& options);

// Checks `value` against one declared field (its children too).
Status CheckField(const Field& field, const nlohmann::json& value, const std::string& where,
                  const CheckOptions& options = {});

}  // namespace batchlab::config

#endif  // BATCHLAB_BASE_CONFIG_CHECK_H_
