// The model registry (see model_registry.h) and MakeModel (models.h), which dispatches through it.
#include "runner/model_registry.h"

#include <map>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "runner/runner_error.h"

namespace batchlab::runner {
namespace {

// Constructed on first use: registrars in other files run during static initialization, in an
// order C++ leaves open.
std::map<std::string, ModelEntry>& Entries() {
  static std::map<std::string, ModelEntry> entries;
  return entries;
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

bool RegisterModel(ModelEntry entry) {
  if (entry.name.empty() || !entry.make) {
    throw std::logic_error("RegisterModel: an entry needs a name and a make function");
  }
  const std::string name = entry.name;
  if (!Entries().emplace(name, std::move(entry)).second) {
    throw std::logic_error("RegisterModel: model \"" + name + "\" is registered twice");
  }
  return true;
}

std::vector<std::string> ModelNames() {
  std::vector<std::string> names;
  for (const auto& [name, entry] : Entries()) names.push_back(name);
  return names;
}

const ModelEntry& FindModel(const std::string& name) {
  auto it = Entries().find(name);
  if (it == Entries().end()) {
    const std::string quoted =
        nlohmann::json(name).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    throw BadConfig("model.name: " + quoted + " is not a registered model; use one of " +
                    JoinNames(ModelNames()) + " (adding a model: docs/cpp-workload.md)");
  }
  return it->second;
}

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
