// The dataset registry (see dataset_registry.h), and LoadDataset and CheckDatasetFiles
// (dataset.h), which dispatch through it.
#include "runner/data/dataset_registry.h"

#include <utility>

#include "runner/config/registry.h"
#include "runner/config/runner_error.h"

namespace batchlab::runner {
namespace {

Registry<DatasetEntry>& Datasets() {
  static Registry<DatasetEntry> datasets("dataset", "data.name");
  return datasets;
}

std::string ShapeText(const torch::Tensor& t) {
  std::string out;
  for (int64_t s : t.sizes()) out += (out.empty() ? "" : ", ") + std::to_string(s);
  return "[" + out + "]";
}

// What the trainer relies on, checked once so that a new loader's mistake is a clear message
// instead of a shape error deep in a step.
void CheckLoaded(const std::string& name, const Dataset& d) {
  auto fail = [&](const std::string& what) {
    throw RunnerError(RunnerError::Kind::kInternal,
                      "data.name \"" + name + "\": the loader returned " + what);
  };
  for (const torch::Tensor* x : {&d.train_x, &d.test_x}) {
    if (!x->defined() || x->dim() != 2 || x->scalar_type() != torch::kFloat32) {
      fail("features that are not a float32 [N, F] tensor");
    }
  }
  if (d.train_x.size(1) != d.test_x.size(1)) {
    fail("training features " + ShapeText(d.train_x) + " and held-out features " +
         ShapeText(d.test_x) + " of different widths");
  }
  if (d.train_size() < 1 || d.test_size() < 1) fail("an empty training or held-out set");
  for (const auto& [x, y] : {std::pair{&d.train_x, &d.train_y}, std::pair{&d.test_x, &d.test_y}}) {
    if (!y->defined() || y->size(0) != x->size(0)) fail("labels that do not match the rows");
    const bool sequence = d.context > 0 && y->dim() == 2 && y->size(1) == d.context &&
                          x->size(1) == d.context;  // text: a next token per position
    const bool labels =
        d.classes > 0 && (y->dim() == 1 || sequence) && y->scalar_type() == torch::kInt64;
    const bool targets =
        d.classes == 0 && y->dim() == 2 && y->size(1) == 1 && y->scalar_type() == torch::kFloat32;
    if (!labels && !targets) {
      fail("labels " + ShapeText(*y) +
           " that are neither int64 [N] class labels (classes > 0) nor float32 [N, 1] targets "
           "(classes = 0)");
    }
  }
}

}  // namespace

bool RegisterDataset(DatasetEntry entry) {
  const bool complete = static_cast<bool>(entry.load);
  Datasets().Add(std::move(entry), complete);
  return true;
}

std::vector<std::string> DatasetNames() { return Datasets().Names(); }

const DatasetEntry& FindDataset(const std::string& name) { return Datasets().Find(name); }

void CheckDataConfig(const DataConfig& config, const std::string& common_fields) {
  const DatasetEntry& entry = FindDataset(config.name);
  CheckOwnFields("data", "dataset \"" + entry.name + "\"", entry.fields, config.own, common_fields);
}

void ApplySampleCaps(const DataConfig& config, Dataset& d) {
  if (config.samples > 0 && config.samples < d.train_size()) {
    d.train_x = d.train_x.narrow(0, 0, config.samples).contiguous();
    d.train_y = d.train_y.narrow(0, 0, config.samples).contiguous();
    if (d.train_pixels.defined()) d.train_pixels = d.train_pixels.narrow(0, 0, config.samples);
  }
  if (config.test_samples > 0 && config.test_samples < d.test_size()) {
    d.test_x = d.test_x.narrow(0, 0, config.test_samples).contiguous();
    d.test_y = d.test_y.narrow(0, 0, config.test_samples).contiguous();
  }
}

void CheckDatasetFiles(const DataConfig& config) {
  const DatasetEntry& entry = FindDataset(config.name);
  if (entry.check) entry.check(config);
}

Dataset LoadDataset(const DataConfig& config) {
  const DatasetEntry& entry = FindDataset(config.name);
  if (entry.check) entry.check(config);
  Dataset d = entry.load(config);
  if (d.name.empty()) d.name = config.name;
  ApplySampleCaps(config, d);
  CheckLoaded(config.name, d);
  return d;
}

}  // namespace batchlab::runner
