// The model registry (see model_registry.h) and MakeModel (models.h), which dispatches through it.
#include "runner/models/model_registry.h"

#include <utility>

#include "runner/config/registry.h"

namespace batchlab::runner {
namespace {

Registry<ModelEntry>& Models() {
  static Registry<ModelEntry> models("model", "model.name");
  return models;
}

}  // namespace

bool RegisterModel(ModelEntry entry) {
  const bool complete = static_cast<bool>(entry.make);
  Models().Add(std::move(entry), complete);
  return true;
}

std::vector<std::string> ModelNames() { return Models().Names(); }

const ModelEntry& FindModel(const std::string& name) { return Models().Find(name); }

void CheckModelConfig(const ModelConfig& config, const std::string& common_fields) {
  const ModelEntry& entry = FindModel(config.name);
  CheckOwnFields("model", "model \"" + entry.name + "\"", entry.fields, config.own, common_fields);
  if (entry.check) entry.check(config);
}

std::shared_ptr<Model> MakeModel(const ModelConfig& config, const Dataset& data) {
  const ModelEntry& entry = FindModel(config.name);
  return entry.make(config, data);
}

}  // namespace batchlab::runner
