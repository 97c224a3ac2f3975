// A training task in memory: the whole training and held-out sets preloaded as tensors, so a
// step only gathers rows by index (no per-step parsing or allocation).
//
//   Dataset data = LoadDataset(config.data);     // throws RunnerError (kData / kBadConfig)
//   data.train_x;      // [N, F] float32, images flattened and normalized
//   data.train_y;      // [N] int64 class labels, or [N, 1] float32 targets (regression)
//   data.classes;      // number of classes; 0 = regression (loss 0.5 * mean squared error)
//
// data.name picks a registered dataset (dataset_registry.h; `batchlab-runner --list`). Built in:
// fashion-mnist (the installed IDX .gz files), idx (the same layout in your folder), csv
// (features + label column), synthetic-linear (synthetic_linear.h; known noise scale), text
// (data/text_file.h: bytes as tokens for a language model).
#ifndef BATCHLAB_RUNNER_DATA_DATASET_H_
#define BATCHLAB_RUNNER_DATA_DATASET_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "runner/config/run_config.h"

namespace batchlab::runner {

// The generating model of synthetic-linear: y = w_star . x + noise * N(0, 1), x ~ N(0, I).
struct LinearTruth {
  torch::Tensor w_star;  // [d]
  double noise = 0;
};

struct Dataset {
  std::string name;
  torch::Tensor train_x, train_y, test_x, test_y;
  // Image sets (idx, fashion-mnist): the training pixels as bytes [N, F], of which train_x is
  // PixelsToFloat. The trainer gathers a batch from these — a quarter of the memory traffic of
  // float rows — and converts it the same way, so it sees the same values. Undefined otherwise.
  torch::Tensor train_pixels;
  int64_t classes = 0;               // 0 = regression
  std::vector<int64_t> image_shape;  // {C, H, W} for image data, else empty
  std::optional<LinearTruth> truth;  // synthetic-linear only
  // text (data/text_file.h): tokens per sample; the labels are then int64 [N, context], the
  // next token at every position. 0: one label (or target) per row.
  int64_t context = 0;

  int64_t features() const { return train_x.size(1); }
  int64_t train_size() const { return train_x.size(0); }
  int64_t test_size() const { return test_x.size(0); }
};

// Image pixels (uint8) to the floats the models see, p / 255, into `out` (float32, same shape):
// how train_x and test_x are made from an image set's bytes, and how the trainer converts a batch
// gathered from train_pixels.
void PixelsToFloat(const torch::Tensor& pixels, torch::Tensor& out);

// The folder the Debian package dataset-fashion-mnist installs.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// Checks that the files `config` names exist and can be opened, without reading them (for
// --validate): the dataset entry's check. Throws RunnerError kBadConfig naming data.path or
// data.test_path. (Defined in dataset_registry.cc, as is LoadDataset.)
void CheckDatasetFiles(const DataConfig& config);

// Loads the dataset `config` names: its entry's check and loader, the data.samples caps, and the
// shapes the trainer relies on. Every rank loads the same full set and then reads its own shard
// (shard_sampler.h). A missing file throws RunnerError kBadConfig (exit 2: no retry would find
// it), a corrupt one kData, naming the file.
Dataset LoadDataset(const DataConfig& config);

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_DATA_DATASET_H_
