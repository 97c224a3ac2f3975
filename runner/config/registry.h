// Registry<Entry>: the entries of one kind (models, datasets) by name, filled by static
// registrars in their own .cc files (model_registry.h, data/dataset_registry.h). Each kind
// keeps one Registry in a function-local static, constructed on first use, because registrars
// in other files run during static initialization in an order C++ leaves open:
//
//   Registry<ModelEntry>& Models() {
//     static Registry<ModelEntry> models("model", "model.name");
//     return models;
//   }
//   Models().Add(std::move(entry), /*complete=*/entry.make != nullptr);   // at registration
//   const ModelEntry& e = Models().Find("mlp");   // unknown: BadConfig naming model.name
#ifndef BATCHLAB_RUNNER_CONFIG_REGISTRY_H_
#define BATCHLAB_RUNNER_CONFIG_REGISTRY_H_

#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner/config/runner_error.h"

namespace batchlab::runner {

template <typename Entry>
class Registry {
 public:
  // `kind`: "model", "dataset" (for messages); `name_field`: the config path that names an
  // entry ("model.name").
  Registry(std::string kind, std::string name_field)
      : kind_(std::move(kind)), name_field_(std::move(name_field)) {}

  // Adds `entry` (keyed by entry.name). An entry without a name, an incomplete one (no factory)
  // or a second one of the same name is a programming error: std::logic_error, thrown during
  // static initialization, so the runner fails on every start.
  void Add(Entry entry, bool complete) {
    if (entry.name.empty() || !complete) {
      throw std::logic_error("registering a " + kind_ + ": an entry needs a name and a factory");
    }
    const std::string name = entry.name;
    if (!entries_.emplace(name, std::move(entry)).second) {
      throw std::logic_error(kind_ + " \"" + name + "\" is registered twice");
    }
  }

  // The entry named `name`; an unknown name throws BadConfig naming the field and listing the
  // registered names.
  const Entry& Find(const std::string& name) const {
    auto it = entries_.find(name);
    if (it != entries_.end()) return it->second;
    const std::string quoted =
        nlohmann::json(name).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    std::string names;
    for (const auto& [n, entry] : entries_) names += (names.empty() ? "" : ", ") + n;
    throw BadConfig(name_field_ + ": " + quoted + " is not a registered " + kind_ +
                    "; use one of " + names + " (adding a " + kind_ + ": docs/cpp-workload.md)");
  }

  // Every registered name, sorted.
  std::vector<std::string> Names() const {
    std::vector<std::string> names;
    for (const auto& [name, entry] : entries_) names.push_back(name);
    return names;
  }

 private:
  std::string kind_;
  std::string name_field_;
  std::map<std::string, Entry> entries_;
};

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_CONFIG_REGISTRY_H_
