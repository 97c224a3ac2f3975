// The datasets batchlab-runner can load, by data.name. Each dataset registers itself with one line
// in its own .cc file (the built-in fashion-mnist, idx, csv and synthetic-linear in dataset.cc and
// synthetic_linear.cc, the same way), so adding a dataset is one new file (docs/cpp-workload.md):
//
//   namespace {
//   void CheckMine(const DataConfig& config) { ... }  // files exist? BadConfig naming data.path
//   Dataset LoadMine(const DataConfig& config) { ... }
//   [[maybe_unused]] const bool registered =
//       RegisterDataset({"mine", "my data", LoadMine, CheckMine});
//   }  // namespace
//
// (model_registry.h says how the static registrar is kept by the linker.)
//
//   Dataset data = LoadDataset(config.data);   // dataset.h: check, load, caps, shape checks
#ifndef BATCHLAB_RUNNER_DATA_DATASET_REGISTRY_H_
#define BATCHLAB_RUNNER_DATA_DATASET_REGISTRY_H_

#include <functional>
#include <string>
#include <vector>

#include "runner/data/dataset.h"
#include "runner/config/own_fields.h"

namespace batchlab::runner {

struct DatasetEntry {
  std::string name;     // data.name
  std::string summary;  // one line, for `batchlab-runner --list` and messages
  // Loads the whole training and held-out sets (dataset.h's Dataset: train_x [N, F] float32,
  // train_y [N] int64 labels with `classes` set, or [N, 1] float32 targets with classes = 0).
  // A corrupt file throws RunnerError kData naming it. data.samples / data.test_samples caps are
  // applied afterwards by LoadDataset (ApplySampleCaps; call it yourself before anything that
  // depends on the rows, e.g. standardizing with the training set's statistics).
  std::function<Dataset(const DataConfig&)> load;
  // Optional: checks without reading the data (files exist, paths given), run by --validate, by
  // the orchestrator's --validate-batch before any launch, and by LoadDataset before `load`. A
  // missing file throws BadConfig naming data.path (exit 2: no retry would find it).
  std::function<void(const DataConfig&)> check = nullptr;
  // Optional: the dataset's own fields (own_fields.h), found in DataConfig::own; required.
  std::vector<OwnField> fields = {};
};

// Adds `entry`; returns true (for `const bool registered = ...;`). A duplicate name or an entry
// without a name or loader is a programming error: std::logic_error.
bool RegisterDataset(DatasetEntry entry);

// The entry named `name`; an unknown name throws BadConfig naming data.name and listing the
// registered names.
const DatasetEntry& FindDataset(const std::string& name);

// Every registered name, sorted.
std::vector<std::string> DatasetNames();

// The parser's check of `config` (ParseRunConfig calls it): a registered name and exactly the
// entry's own fields. `common_fields`: the fields every dataset reads, for messages.
void CheckDataConfig(const DataConfig& config, const std::string& common_fields);

// Keeps the first data.samples training rows and data.test_samples held-out rows (0: all).
void ApplySampleCaps(const DataConfig& config, Dataset& data);

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_DATA_DATASET_REGISTRY_H_
