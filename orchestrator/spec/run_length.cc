// A resolved config's run shape (see run_length.h).
#include "orchestrator/spec/run_length.h"

#include <algorithm>
#include <string>

#include "base/sync_mode.h"
#include "orchestrator/spec/config_schema.h"

namespace batchlab::orchestrator {

using nlohmann::json;

run_values::RunShape RunShapeOf(const json& config) {
  run_values::RunShape shape;
  if (!config.is_object()) return shape;
  auto number = [](const json& object, const char* key) {
    return object.is_object() && object.contains(key) && object[key].is_number()
               ? object[key].get<double>()
               : 0.0;
  };
  shape.batch = static_cast<int64_t>(number(config, "batch_size"));
  shape.world = std::max<int64_t>(1, static_cast<int64_t>(number(config, "world_size")));
  shape.local_batch = shape.batch / shape.world;
  const json comm = config.value("comm", json::object());
  if (comm.is_object() && comm.contains("sync") && comm["sync"].is_string()) {
    const SyncModeInfo* mode = FindSyncMode(comm["sync"].get<std::string>());
    shape.one_worker_steps = mode != nullptr && mode->one_worker_steps;
  }
  const json schedule = config.value("batch_schedule", json());
  if (schedule.is_object() && schedule.value("at_samples", json()).is_array() &&
      schedule.value("batch_sizes", json()).is_array()) {
    shape.schedule.at_samples = schedule["at_samples"].get<std::vector<int64_t>>();
    shape.schedule.batch_sizes = schedule["batch_sizes"].get<std::vector<int64_t>>();
  }
  shape.schedule.first_batch = shape.batch;
  const json budget = config.value("budget", json());
  shape.budget = {number(budget, "epochs"), static_cast<int64_t>(number(budget, "steps")),
                  static_cast<int64_t>(number(budget, "samples")), number(budget, "seconds")};
  if (shape.budget.epochs > 0 && config.contains("data")) {
    if (StatusOr<long long> n = DatasetSize(config["data"]); n.ok()) shape.train_samples = *n;
  }
  return shape;
}

}  // namespace batchlab::orchestrator
