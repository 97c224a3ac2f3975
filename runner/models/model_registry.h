// The models batchlab-runner can train, by model.name. Each model registers itself with one line
// in its own .cc file (the built-in logreg, mlp and cnn in models.cc, the same way), so adding a
// model is one new file (docs/cpp-workload.md):
//
//   namespace {
//   std::shared_ptr<Model> MakeResMlp(const ModelConfig& config, const Dataset& data) { ... }
//   [[maybe_unused]] const bool registered = RegisterModel({"res_mlp", "residual MLP",
//   MakeResMlp}); }  // namespace
//
// A static registrar runs only if its object file is linked: runner/CMakeLists.txt builds every
// runner/*.cc as an OBJECT library (no object is dropped), and a file outside runner/ goes into
// the executable's own sources (examples/cpp-workload/CMakeLists.txt).
//
//   const ModelEntry& entry = FindModel("mlp");   // unknown: BadConfig naming model.name
//   std::shared_ptr<Model> m = MakeModel(config.model, data);   // models.h: the same, by name
#ifndef BATCHLAB_RUNNER_MODELS_MODEL_REGISTRY_H_
#define BATCHLAB_RUNNER_MODELS_MODEL_REGISTRY_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runner/models/models.h"
#include "runner/config/own_fields.h"

namespace batchlab::runner {

struct ModelEntry {
  std::string name;     // model.name
  std::string summary;  // one line, for `batchlab-runner --list` and messages
  // Builds the model for `data` (size its input from data.features(), its output from
  // data.classes, 0 = regression: one output). Throws BadConfig naming model.* (or data.name)
  // when the model cannot fit this data. Initialize from the global generator (seeded already).
  std::function<std::shared_ptr<Model>(const ModelConfig&, const Dataset&)> make;
  // Optional: checks of the config alone, run by the parser (so --validate and the
  // orchestrator's --validate-batch see them before any launch). Throws BadConfig naming model.*.
  std::function<void(const ModelConfig&)> check = nullptr;
  // Optional: the model's own fields (own_fields.h), found in ModelConfig::own; required.
  std::vector<OwnField> fields = {};
};

// Adds `entry`; returns true, so that a file registers with `const bool registered = ...;`.
// A second entry of the same name, or one without a name or factory, is a programming error:
// std::logic_error (at static initialization, so the runner fails on every start).
bool RegisterModel(ModelEntry entry);

// The entry named `name`; an unknown name throws BadConfig "model.name: unknown model ...;
// registered: cnn, logreg, mlp".
const ModelEntry& FindModel(const std::string& name);

// Every registered name, sorted.
std::vector<std::string> ModelNames();

// The parser's check of `config` (ParseRunConfig calls it): a registered name, exactly the
// entry's own fields, then the entry's check. `common_fields` ("bias, channels, hidden, name"):
// the fields every model reads, for the message about an unknown one.
void CheckModelConfig(const ModelConfig& config, const std::string& common_fields);

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_MODELS_MODEL_REGISTRY_H_
