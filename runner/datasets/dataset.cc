// LoadDataset: dispatch by data.name, normalization, and the checks every dataset shares.
#include "runner/datasets/dataset.h"

#include <fstream>

#include "runner/datasets/csv_file.h"
#include "runner/datasets/idx_file.h"
#include "runner/datasets/synthetic_linear.h"
#include "runner/runner_error.h"

namespace batchlab::runner {
namespace {

RunnerError DataError(const std::string& what) {
  return RunnerError(RunnerError::Kind::kData, what);
}

// A missing file is a bad config (exit 2, never retried): no second attempt would find it.
std::string RequireIdx(const std::string& dir, const std::string& stem, const std::string& name) {
  const std::string found = FindIdxFile(dir + "/" + stem);
  if (found.empty()) {
    std::string fix = name == "fashion-mnist"
                          ? "install it with `apt-get install dataset-fashion-mnist` or set "
                            "data.path to a folder holding the four IDX files"
                          : "check data.path";
    throw BadConfig("data.path: " + stem + "[.gz] not found in \"" + dir + "\" (data.name \"" +
                    name + "\"); " + fix);
  }
  return found;
}

constexpr const char* kIdxStems[] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                     "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};

void RequireReadable(const std::string& path, const char* field) {
  if (!std::ifstream(path)) {
    throw BadConfig(std::string(field) + ": \"" + path +
                    "\" cannot be opened; check the path (relative paths are relative to the "
                    "attempt folder)");
  }
}

// images uint8 [N, H, W] (or [N, H, W, C]) and labels uint8 [N] -> rows of floats in [0, 1].
void FromIdx(const torch::Tensor& images, const torch::Tensor& labels, const std::string& where,
             torch::Tensor& x, torch::Tensor& y) {
  if (images.dim() < 2 || labels.dim() != 1 || images.size(0) != labels.size(0)) {
    throw DataError(where + ": image and label files disagree (" + std::to_string(images.size(0)) +
                    " images, " + std::to_string(labels.size(0)) + " labels)");
  }
  x = images.reshape({images.size(0), -1}).to(torch::kFloat32).div_(255.0f);
  y = labels.to(torch::kInt64);
}

Dataset LoadIdx(const DataConfig& c) {
  const std::string dir = c.path.empty() ? kFashionMnistDir : c.path;
  Dataset d;
  d.name = c.name;
  const torch::Tensor train_images =
      ReadIdxFile(RequireIdx(dir, "train-images-idx3-ubyte", c.name));
  const torch::Tensor train_labels =
      ReadIdxFile(RequireIdx(dir, "train-labels-idx1-ubyte", c.name));
  const torch::Tensor test_images = ReadIdxFile(RequireIdx(dir, "t10k-images-idx3-ubyte", c.name));
  const torch::Tensor test_labels = ReadIdxFile(RequireIdx(dir, "t10k-labels-idx1-ubyte", c.name));
  FromIdx(train_images, train_labels, dir + "/train-*", d.train_x, d.train_y);
  FromIdx(test_images, test_labels, dir + "/t10k-*", d.test_x, d.test_y);
  if (train_images.sizes().slice(1) != test_images.sizes().slice(1)) {
    throw DataError("data.path: training and test images in \"" + dir + "\" differ in shape");
  }
  if (train_images.dim() == 3) {
    d.image_shape = {1, train_images.size(1), train_images.size(2)};
  } else if (train_images.dim() == 4) {  // [N, H, W, C]: store channels first
    const int64_t h = train_images.size(1), w = train_images.size(2), ch = train_images.size(3);
    auto to_chw = [&](torch::Tensor& x) {
      x = x.view({x.size(0), h, w, ch}).permute({0, 3, 1, 2}).reshape({x.size(0), -1});
    };
    to_chw(d.train_x);
    to_chw(d.test_x);
    d.image_shape = {ch, h, w};
  }
  d.classes = std::max(d.train_y.max().item<int64_t>(), d.test_y.max().item<int64_t>()) + 1;
  return d;
}

Dataset LoadCsv(const DataConfig& c) {
  const bool classification = c.task != "regression";
  Dataset d;
  d.name = "csv";
  CsvTable train = ReadCsvFile(c.path, c.label_column, classification);
  if (c.test_path.empty()) {  // hold out the last sixth
    const int64_t n = train.x.size(0);
    const int64_t n_test = n / 6;
    if (n_test < 1)
      throw DataError("data.path: \"" + c.path +
                      "\" has too few rows to hold out a "
                      "test set; set data.test_path");
    d.train_x = train.x.narrow(0, 0, n - n_test).clone();
    d.train_y = train.y.narrow(0, 0, n - n_test).clone();
    d.test_x = train.x.narrow(0, n - n_test, n_test).clone();
    d.test_y = train.y.narrow(0, n - n_test, n_test).clone();
  } else {
    CsvTable test = ReadCsvFile(c.test_path, c.label_column, classification);
    if (test.x.size(1) != train.x.size(1)) {
      throw DataError("data.test_path: \"" + c.test_path + "\" has " +
                      std::to_string(test.x.size(1)) + " feature columns, the training file " +
                      std::to_string(train.x.size(1)));
    }
    d.train_x = train.x, d.train_y = train.y, d.test_x = test.x, d.test_y = test.y;
  }
  if (classification) {
    d.classes = std::max(d.train_y.max().item<int64_t>(), d.test_y.max().item<int64_t>()) + 1;
    if (d.classes < 2) throw DataError("data.path: \"" + c.path + "\" has only one class");
  }
  return d;
}

}  // namespace

void CheckDatasetFiles(const DataConfig& config) {
  if (config.name == "synthetic-linear") return;
  if (config.name == "csv") {
    RequireReadable(config.path, "data.path");
    if (!config.test_path.empty()) RequireReadable(config.test_path, "data.test_path");
    return;
  }
  const std::string dir = config.path.empty() ? kFashionMnistDir : config.path;
  for (const char* stem : kIdxStems) RequireIdx(dir, stem, config.name);
}

Dataset LoadDataset(const DataConfig& config) {
  Dataset d;
  if (config.name == "synthetic-linear") {
    return MakeSyntheticLinear(config);  // already standard normal; samples is its size
  }
  d = config.name == "csv" ? LoadCsv(config) : LoadIdx(config);

  // data.samples / data.test_samples cap the sets (the first rows), for quick studies and tests.
  if (config.samples > 0 && config.samples < d.train_size()) {
    d.train_x = d.train_x.narrow(0, 0, config.samples).contiguous();
    d.train_y = d.train_y.narrow(0, 0, config.samples).contiguous();
  }
  if (config.test_samples > 0 && config.test_samples < d.test_size()) {
    d.test_x = d.test_x.narrow(0, 0, config.test_samples).contiguous();
    d.test_y = d.test_y.narrow(0, 0, config.test_samples).contiguous();
  }
  // Images stay in [0, 1] (standardizing them makes the quickstart's LR 0.05 x momentum 0.9
  // noticeably noisier); CSV columns are standardized with the training set's statistics.
  if (d.image_shape.empty()) {
    const torch::Tensor mean = d.train_x.mean(0, /*keepdim=*/true);
    const torch::Tensor std = d.train_x.std(0, /*unbiased=*/true, /*keepdim=*/true).clamp_min(1e-6);
    d.train_x = d.train_x.sub(mean).div_(std).contiguous();
    d.test_x = d.test_x.sub(mean).div_(std).contiguous();
  }
  return d;
}

}  // namespace batchlab::runner
