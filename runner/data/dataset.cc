// The file datasets fashion-mnist, idx and csv: loading, normalization, and their file checks,
// registered like any other dataset (dataset_registry.h).
#include "runner/data/dataset.h"

#include <fstream>
#include <iostream>

#include "runner/data/csv_file.h"
#include "runner/data/dataset_registry.h"
#include "runner/data/decoded_cache.h"
#include "runner/data/idx_file.h"
#include "runner/config/runner_error.h"

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

// images uint8 [N, H, W] (or [N, H, W, C]) and labels uint8 [N] -> pixel rows [N, C*H*W] in
// CHW order (uint8) and int64 labels.
void FromIdx(const torch::Tensor& images, const torch::Tensor& labels, const std::string& where,
             torch::Tensor& pixels, torch::Tensor& y) {
  if (images.dim() < 2 || labels.dim() != 1 || images.size(0) != labels.size(0)) {
    throw DataError(where + ": image and label files disagree (" + std::to_string(images.size(0)) +
                    " images, " + std::to_string(labels.size(0)) + " labels)");
  }
  const torch::Tensor chw = images.dim() == 4 ? images.permute({0, 3, 1, 2}) : images;
  pixels = chw.reshape({images.size(0), -1}).contiguous();
  y = labels.to(torch::kInt64);
}

torch::Tensor ToFloat(const torch::Tensor& pixels) {
  torch::Tensor x = torch::empty(pixels.sizes(), torch::kFloat32);
  PixelsToFloat(pixels, x);
  return x;
}

// Decompresses and converts the four IDX files (`files` in kIdxStems order).
Dataset DecodeIdx(const std::string& dir, const std::vector<std::string>& files) {
  Dataset d;
  const torch::Tensor train_images = ReadIdxFile(files[0]);
  const torch::Tensor train_labels = ReadIdxFile(files[1]);
  const torch::Tensor test_images = ReadIdxFile(files[2]);
  const torch::Tensor test_labels = ReadIdxFile(files[3]);
  torch::Tensor test_pixels;
  FromIdx(train_images, train_labels, dir + "/train-*", d.train_pixels, d.train_y);
  FromIdx(test_images, test_labels, dir + "/t10k-*", test_pixels, d.test_y);
  if (train_images.sizes().slice(1) != test_images.sizes().slice(1)) {
    throw DataError("data.path: training and test images in \"" + dir + "\" differ in shape");
  }
  d.train_x = ToFloat(d.train_pixels);
  d.test_x = ToFloat(test_pixels);
  if (train_images.dim() == 3) {
    d.image_shape = {1, train_images.size(1), train_images.size(2)};
  } else if (train_images.dim() == 4) {  // [N, H, W, C]: stored channels first
    d.image_shape = {train_images.size(3), train_images.size(1), train_images.size(2)};
  }
  d.classes = std::max(d.train_y.max().item<int64_t>(), d.test_y.max().item<int64_t>()) + 1;
  return d;
}

}  // namespace

void PixelsToFloat(const torch::Tensor& pixels, torch::Tensor& out) {
  torch::div_out(out, pixels, torch::scalar_tensor(255.0f));  // one pass: (float)p / 255
}

namespace {

// The IDX sets through the decoded cache (decoded_cache.h): mapped when a valid file exists for
// these sources, else decoded and stored. Bump the conversion's name when DecodeIdx changes.
Dataset LoadIdx(const DataConfig& c) {
  const std::string dir = c.path.empty() ? kFashionMnistDir : c.path;
  std::vector<std::string> files;
  for (const char* stem : kIdxStems) files.push_back(RequireIdx(dir, stem, c.name));
  const DecodedCache cache = DecodedCache::FromEnvironment();
  const std::string key =
      cache.enabled() ? SourceKey(files, "idx u8/255 f32, CHW, train pixels, v2") : "";
  std::string why;
  if (cache.enabled()) {
    auto t = cache.Read(key, &why);
    if (t && t->size() == 6 && t->at(4).numel() == 4 && t->at(4).scalar_type() == torch::kInt64 &&
        t->at(5).scalar_type() == torch::kUInt8 && t->at(5).sizes() == t->at(0).sizes()) {
      Dataset d;
      d.train_x = (*t)[0], d.train_y = (*t)[1], d.test_x = (*t)[2], d.test_y = (*t)[3];
      d.train_pixels = (*t)[5];
      const auto meta = (*t)[4].accessor<int64_t, 1>();  // classes, C, H, W (C = 0: no shape)
      d.classes = meta[0];
      if (meta[1] > 0) d.image_shape = {meta[1], meta[2], meta[3]};
      d.name = c.name;
      return d;
    }
    if (why != "absent") {
      std::cerr << "batchlab-runner: data cache " << cache.PathFor(key) << " is " << why
                << "; rebuilding it\n";
    }
  }
  Dataset d = DecodeIdx(dir, files);
  d.name = c.name;
  if (cache.enabled()) {
    torch::Tensor meta = torch::zeros({4}, torch::kInt64);
    auto m = meta.accessor<int64_t, 1>();
    m[0] = d.classes;
    for (size_t i = 0; i < d.image_shape.size(); ++i)
      m[static_cast<int64_t>(i) + 1] = d.image_shape[i];
    d.train_x = d.train_x.contiguous(), d.test_x = d.test_x.contiguous();
    if (!cache.Write(key, {d.train_x, d.train_y, d.test_x, d.test_y, meta, d.train_pixels}, &why)) {
      std::cerr << "batchlab-runner: warning: data cache not written (" << why << ")\n";
    }
  }
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

// CSV columns are standardized with the training set's statistics; images stay in [0, 1]
// (standardizing them makes the quickstart's LR 0.05 x momentum 0.9 noticeably noisier).
void StandardizeFeatures(Dataset& d) {
  const torch::Tensor mean = d.train_x.mean(0, /*keepdim=*/true);
  const torch::Tensor std = d.train_x.std(0, /*unbiased=*/true, /*keepdim=*/true).clamp_min(1e-6);
  d.train_x = d.train_x.sub(mean).div_(std).contiguous();
  d.test_x = d.test_x.sub(mean).div_(std).contiguous();
}

// data.samples / data.test_samples cap the sets (the first rows) before the statistics are taken.
Dataset Prepared(const DataConfig& config, Dataset d) {
  ApplySampleCaps(config, d);
  if (d.image_shape.empty()) StandardizeFeatures(d);
  return d;
}

void CheckIdx(const DataConfig& config) {
  if (config.name == "idx" && config.path.empty()) {
    throw BadConfig(
        "data.path: data.name \"idx\" needs the path of your data (a folder with "
        "train-images-idx3-ubyte[.gz] etc.)");
  }
  const std::string dir = config.path.empty() ? kFashionMnistDir : config.path;
  for (const char* stem : kIdxStems) RequireIdx(dir, stem, config.name);
}

void CheckCsv(const DataConfig& config) {
  if (config.path.empty()) {
    throw BadConfig(
        "data.path: data.name \"csv\" needs the path of your data (a CSV file of features and a "
        "label column)");
  }
  RequireReadable(config.path, "data.path");
  if (!config.test_path.empty()) RequireReadable(config.test_path, "data.test_path");
}

Dataset LoadPreparedIdx(const DataConfig& config) { return Prepared(config, LoadIdx(config)); }
Dataset LoadPreparedCsv(const DataConfig& config) { return Prepared(config, LoadCsv(config)); }

[[maybe_unused]] const bool registered_fashion_mnist = RegisterDataset(
    {"fashion-mnist",
     "Fashion-MNIST 28x28 images, 10 classes (dataset-fashion-mnist; data.path: another folder)",
     LoadPreparedIdx, CheckIdx});
[[maybe_unused]] const bool registered_idx =
    RegisterDataset({"idx", "your IDX files in the Fashion-MNIST layout (data.path: their folder)",
                     LoadPreparedIdx, CheckIdx});
[[maybe_unused]] const bool registered_csv =
    RegisterDataset({"csv", "a CSV file of features and a label column (data.path, data.test_path)",
                     LoadPreparedCsv, CheckCsv});

}  // namespace

}  // namespace batchlab::runner
