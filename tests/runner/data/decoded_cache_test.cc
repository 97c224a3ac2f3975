// The decoded dataset cache: a stored file gives back the same tensors; truncated, corrupt and
// stale files are reported as misses; LoadDataset rebuilds a damaged file; a training run on
// cached data gives the same losses, step by step, as one on freshly decoded data.
#include "runner/data/decoded_cache.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "runner/data/dataset.h"
#include "runner/train/trainer.h"
#include "tests/support/temp_dir.h"

namespace batchlab::runner {
namespace {

namespace fs = std::filesystem;

// Sets BATCHLAB_DATA_CACHE for the scope of a test, restoring the previous value.
class CacheEnv {
 public:
  explicit CacheEnv(const std::string& value) {
    if (const char* v = std::getenv("BATCHLAB_DATA_CACHE")) old_ = v;
    setenv("BATCHLAB_DATA_CACHE", value.c_str(), 1);
  }
  ~CacheEnv() {
    if (old_) {
      setenv("BATCHLAB_DATA_CACHE", old_->c_str(), 1);
    } else {
      unsetenv("BATCHLAB_DATA_CACHE");
    }
  }

 private:
  std::optional<std::string> old_;
};

std::vector<torch::Tensor> Sample() {
  return {torch::arange(0, 30, torch::kFloat32).reshape({5, 6}).div(7),
          torch::arange(0, 5, torch::kInt64), torch::full({3}, 200, torch::kUInt8)};
}

void ExpectSame(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].scalar_type(), b[i].scalar_type()) << i;
    EXPECT_TRUE(torch::equal(a[i], b[i])) << i;
  }
}

void Damage(const std::string& path, uintmax_t truncate_to, std::optional<uintmax_t> flip_at) {
  if (flip_at) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(*flip_at));
    const char c = static_cast<char>(f.get() ^ 0x5a);
    f.seekp(static_cast<std::streamoff>(*flip_at));
    f.put(c);
  } else {
    fs::resize_file(path, truncate_to);
  }
}

TEST(DecodedCacheTest, StoredTensorsComeBackIdentical) {
  testing::TempDir dir;
  DecodedCache cache(dir.File("cache"));
  std::string why;
  EXPECT_FALSE(cache.Read("k", &why));
  EXPECT_EQ(why, "absent");
  ASSERT_TRUE(cache.Write("k", Sample(), &why)) << why;
  auto back = cache.Read("k", &why);
  ASSERT_TRUE(back) << why;
  ExpectSame(*back, Sample());
  EXPECT_EQ(fs::path(cache.PathFor("k")).parent_path(), fs::path(dir.File("cache")));
  // No temporary file is left beside it.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.File("cache")), fs::directory_iterator{}), 1);
}

TEST(DecodedCacheTest, TruncatedCorruptAndStaleFilesAreMisses) {
  testing::TempDir dir;
  DecodedCache cache(dir.path());
  std::string why;
  ASSERT_TRUE(cache.Write("k", Sample(), &why)) << why;
  const std::string path = cache.PathFor("k");
  const auto size = fs::file_size(path);

  Damage(path, size - 3, std::nullopt);
  EXPECT_FALSE(cache.Read("k", &why));
  EXPECT_NE(why.find("truncated"), std::string::npos) << why;

  ASSERT_TRUE(cache.Write("k", Sample(), &why));
  Damage(path, 0, size - 1);  // the last data byte
  EXPECT_FALSE(cache.Read("k", &why));
  EXPECT_EQ(why, "corrupt (data CRC)");

  ASSERT_TRUE(cache.Write("k", Sample(), &why));
  Damage(path, 0, 40);  // inside the key, in the header
  EXPECT_FALSE(cache.Read("k", &why));
  EXPECT_EQ(why, "corrupt (header CRC)");

  ASSERT_TRUE(cache.Write("k", Sample(), &why));
  fs::copy_file(path, cache.PathFor("other"));  // a file found under another key's name
  EXPECT_FALSE(cache.Read("other", &why));
  EXPECT_EQ(why, "stale (another key)");
}

TEST(DecodedCacheTest, KeyNamesTheSourcesSizeAndTime) {
  testing::TempDir dir;
  std::ofstream(dir.File("a")) << "abc";
  const std::string k1 = SourceKey({dir.File("a")}, "conv v1");
  EXPECT_NE(k1, SourceKey({dir.File("a")}, "conv v2"));
  std::ofstream(dir.File("a")) << "abcd";
  EXPECT_NE(k1, SourceKey({dir.File("a")}, "conv v1"));
}

// Real Fashion-MNIST: decoded fresh (cache off), decoded and stored, mapped from the file, and
// after the file is damaged, rebuilt. The tensors and a training run's losses agree bit for bit.
TEST(DecodedCacheTest, CachedFashionMnistTrainsExactlyLikeDecoded) {
  testing::TempDir dir;
  const RunConfig c = ParseRunConfig(
      nlohmann::json::parse(R"({"batch_size": 32, "seed": 5, "data": {"samples": 1024},
                   "model": {"name": "mlp", "hidden": [16]}, "budget": {"steps": 12}})"),
      1);
  auto losses = [&](const Dataset& d) {
    Trainer t(c, d, nullptr, nullptr, 0);
    t.Run();
    return t.losses();
  };
  std::optional<Dataset> fresh;
  {
    CacheEnv off("off");
    fresh = LoadDataset(c.data);
  }
  CacheEnv on(dir.path());
  const Dataset stored = LoadDataset(c.data);  // decodes and writes the file
  ASSERT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator{}), 1);
  const std::string file = fs::directory_iterator(dir.path())->path().string();
  const Dataset mapped = LoadDataset(c.data);
  for (const Dataset* d : {&stored, &mapped}) {
    EXPECT_TRUE(torch::equal(d->train_x, fresh->train_x));
    EXPECT_TRUE(torch::equal(d->train_y, fresh->train_y));
    EXPECT_TRUE(torch::equal(d->test_x, fresh->test_x));
    EXPECT_TRUE(torch::equal(d->test_y, fresh->test_y));
    EXPECT_TRUE(torch::equal(d->train_pixels, fresh->train_pixels));
    EXPECT_EQ(d->classes, fresh->classes);
    EXPECT_EQ(d->image_shape, fresh->image_shape);
  }
  const std::vector<double> expected = losses(*fresh);
  ASSERT_EQ(expected.size(), 12u);
  EXPECT_EQ(losses(mapped), expected);  // bit for bit
  // Batches gathered from the pixel bytes are the float rows: the same run without them trains
  // bit for bit alike.
  Dataset floats_only = *fresh;
  floats_only.train_pixels = torch::Tensor();
  EXPECT_EQ(losses(floats_only), expected);

  const auto full_size = fs::file_size(file);
  Damage(file, full_size / 2, std::nullopt);
  const Dataset rebuilt = LoadDataset(c.data);  // detects the truncation, decodes, rewrites
  EXPECT_TRUE(torch::equal(rebuilt.train_x, fresh->train_x));
  EXPECT_EQ(fs::file_size(file), full_size);  // the damaged file was replaced by a whole one
  const Dataset again = LoadDataset(c.data);
  EXPECT_TRUE(torch::equal(again.train_x, fresh->train_x));
  EXPECT_EQ(losses(rebuilt), expected);
}

}  // namespace
}  // namespace batchlab::runner
