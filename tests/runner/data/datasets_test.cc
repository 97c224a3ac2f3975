// Datasets on real files: the installed Fashion-MNIST, and small IDX/CSV files written here
// (valid, corrupt, truncated); the distributed sampler's shards.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "runner/data/csv_file.h"
#include "runner/data/dataset.h"
#include "runner/data/idx_file.h"
#include "runner/data/shard_sampler.h"
#include "runner/config/runner_error.h"
#include "tests/support/temp_dir.h"

namespace batchlab::runner {
namespace {

void WriteBytes(const std::string& path, const std::vector<unsigned char>& bytes, bool gz) {
  if (gz) {
    gzFile f = gzopen(path.c_str(), "wb");
    gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(f);
  } else {
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
  }
}

// An IDX ubyte file with the given dims and values 0, 1, 2, ...
std::vector<unsigned char> Idx(const std::vector<int>& dims, size_t values) {
  std::vector<unsigned char> b = {0, 0, 8, static_cast<unsigned char>(dims.size())};
  for (int d : dims) {
    b.push_back(0), b.push_back(0), b.push_back(static_cast<unsigned char>(d >> 8));
    b.push_back(static_cast<unsigned char>(d & 255));
  }
  for (size_t i = 0; i < values; ++i) b.push_back(static_cast<unsigned char>(i % 251));
  return b;
}

std::string MessageOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const RunnerError& e) {
    return e.what();
  }
  return "";
}

TEST(IdxFileTest, ReadsTheInstalledFashionMnist) {
  const torch::Tensor images =
      ReadIdxFile(std::string(kFashionMnistDir) + "/t10k-images-idx3-ubyte.gz");
  EXPECT_EQ(images.sizes(), torch::IntArrayRef({10000, 28, 28}));
  const torch::Tensor labels =
      ReadIdxFile(std::string(kFashionMnistDir) + "/t10k-labels-idx1-ubyte.gz");
  ASSERT_EQ(labels.sizes(), torch::IntArrayRef({10000}));
  EXPECT_EQ(labels.max().item<int>(), 9);
  // Every class is present ~1000 times in the test set.
  const torch::Tensor counts = torch::bincount(labels.to(torch::kInt64));
  EXPECT_EQ(counts.min().item<int64_t>(), 1000);
}

TEST(IdxFileTest, ReadsGzipAndPlainAndRejectsDamage) {
  const batchlab::testing::TempDir tmp;  // removed with its files when the test ends
  const std::string& dir = tmp.path();
  WriteBytes(dir + "/a.gz", Idx({3, 2}, 6), true);
  WriteBytes(dir + "/b", Idx({3, 2}, 6), false);
  const torch::Tensor a = ReadIdxFile(dir + "/a.gz");
  EXPECT_EQ(a.sizes(), torch::IntArrayRef({3, 2}));
  EXPECT_EQ(a[2][1].item<int>(), 5);
  EXPECT_TRUE(torch::equal(a, ReadIdxFile(dir + "/b")));
  EXPECT_EQ(FindIdxFile(dir + "/a"), dir + "/a.gz");
  EXPECT_EQ(FindIdxFile(dir + "/b"), dir + "/b");
  EXPECT_EQ(FindIdxFile(dir + "/c"), "");

  WriteBytes(dir + "/short.gz", Idx({3, 2}, 4), true);  // header says 6 values, file has 4
  EXPECT_NE(MessageOf([&] { ReadIdxFile(dir + "/short.gz"); }).find("truncated"),
            std::string::npos);
  std::vector<unsigned char> gz_garbage = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 'x',
                                           'y',  'z',  1, 2, 3, 4, 5, 6, 7, 8, 9};
  WriteBytes(dir + "/corrupt.gz", gz_garbage, false);
  const std::string corrupt = MessageOf([&] { ReadIdxFile(dir + "/corrupt.gz"); });
  EXPECT_NE(corrupt.find(dir + "/corrupt.gz"), std::string::npos) << corrupt;
  EXPECT_NE(MessageOf([&] { ReadIdxFile(dir + "/missing.gz"); }).find("does not exist"),
            std::string::npos);
}

TEST(DatasetTest, FashionMnistIsPreloadedInZeroOne) {
  DataConfig c;
  c.samples = 1000;  // cap for speed; still reads and decompresses the real files
  const Dataset d = LoadDataset(c);
  EXPECT_EQ(d.train_size(), 1000);
  EXPECT_EQ(d.test_size(), 10000);
  EXPECT_EQ(d.features(), 784);
  EXPECT_EQ(d.classes, 10);
  EXPECT_EQ(d.image_shape, std::vector<int64_t>({1, 28, 28}));
  EXPECT_GE(d.train_x.min().item<float>(), 0.0f);
  EXPECT_LE(d.train_x.max().item<float>(), 1.0f);
  EXPECT_GT(d.train_x.max().item<float>(), 0.99f);
  EXPECT_EQ(d.train_y.scalar_type(), torch::kInt64);
  // The training pixels as bytes, capped alike, and train_x is exactly their floats.
  ASSERT_TRUE(d.train_pixels.defined());
  EXPECT_EQ(d.train_pixels.scalar_type(), torch::kUInt8);
  EXPECT_EQ(d.train_pixels.sizes(), d.train_x.sizes());
  torch::Tensor x = torch::empty_like(d.train_x);
  PixelsToFloat(d.train_pixels, x);
  EXPECT_TRUE(torch::equal(x, d.train_x));
}

TEST(DatasetTest, MissingDatasetNamesThePathAndTheFix) {
  DataConfig c;
  c.path = "/nonexistent/fmnist";
  try {
    LoadDataset(c);
    FAIL() << "no error";
  } catch (const RunnerError& e) {
    EXPECT_EQ(e.kind(), RunnerError::Kind::kBadConfig);  // exit 2: never retried
    EXPECT_EQ(e.exit_code(), 2);
    const std::string m = e.what();
    EXPECT_NE(m.find("/nonexistent/fmnist"), std::string::npos) << m;
    EXPECT_NE(m.find("train-images-idx3-ubyte"), std::string::npos) << m;
  }
  // CheckDatasetFiles (for --validate) says the same without loading anything.
  try {
    CheckDatasetFiles(c);
    FAIL() << "no error";
  } catch (const RunnerError& e) {
    EXPECT_EQ(e.kind(), RunnerError::Kind::kBadConfig);
    EXPECT_NE(std::string(e.what()).find("data.path"), std::string::npos) << e.what();
  }
  DataConfig synthetic;
  synthetic.name = "synthetic-linear";
  EXPECT_NO_THROW(CheckDatasetFiles(synthetic));
  EXPECT_NO_THROW(CheckDatasetFiles(DataConfig{}));  // the installed Fashion-MNIST
}

TEST(DatasetTest, UserIdxFolderWithTheFashionMnistLayout) {
  const batchlab::testing::TempDir tmp;  // removed with its files when the test ends
  const std::string& dir = tmp.path();
  WriteBytes(dir + "/train-images-idx3-ubyte", Idx({12, 4, 4}, 12 * 16), false);
  WriteBytes(dir + "/t10k-images-idx3-ubyte.gz", Idx({6, 4, 4}, 6 * 16), true);
  std::vector<unsigned char> labels = {0, 0, 8, 1, 0, 0, 0, 12};
  for (int i = 0; i < 12; ++i) labels.push_back(static_cast<unsigned char>(i % 3));
  WriteBytes(dir + "/train-labels-idx1-ubyte", labels, false);
  labels = {0, 0, 8, 1, 0, 0, 0, 6, 0, 1, 2, 0, 1, 2};
  WriteBytes(dir + "/t10k-labels-idx1-ubyte", labels, false);
  DataConfig c;
  c.name = "idx";
  c.path = dir;
  const Dataset d = LoadDataset(c);
  EXPECT_EQ(d.train_size(), 12);
  EXPECT_EQ(d.test_size(), 6);
  EXPECT_EQ(d.classes, 3);
  EXPECT_EQ(d.image_shape, std::vector<int64_t>({1, 4, 4}));
}

TEST(CsvFileTest, HeaderLabelColumnAndStandardization) {
  const batchlab::testing::TempDir tmp;  // removed with its files when the test ends
  const std::string& dir = tmp.path();
  std::ofstream(dir + "/train.csv") << "a,label,b\n1,0,10\n2,1,20\n3,0,30\n4,1,40\n";
  const CsvTable t = ReadCsvFile(dir + "/train.csv", 1, true);
  EXPECT_EQ(t.x.sizes(), torch::IntArrayRef({4, 2}));
  EXPECT_EQ(t.y[3].item<int64_t>(), 1);
  EXPECT_FLOAT_EQ(t.x[2][1].item<float>(), 30.0f);

  std::ofstream(dir + "/test.csv") << "a,label,b\n5,1,50\n";
  DataConfig c;
  c.name = "csv";
  c.path = dir + "/train.csv";
  c.test_path = dir + "/test.csv";
  c.label_column = 1;
  const Dataset d = LoadDataset(c);
  EXPECT_EQ(d.classes, 2);
  EXPECT_NEAR(d.train_x.mean(0)[0].item<float>(), 0.0f, 1e-6);  // standardized
  EXPECT_NEAR(d.train_x.std(0)[1].item<float>(), 1.0f, 1e-5);

  std::ofstream(dir + "/bad.csv") << "1,2,0\n3,oops,1\n";
  const std::string m = MessageOf([&] { ReadCsvFile(dir + "/bad.csv", -1, true); });
  EXPECT_NE(m.find("line 2: column 1 (\"oops\")"), std::string::npos) << m;
  std::ofstream(dir + "/real.csv") << "1,0.5\n2,1.5\n";
  EXPECT_NE(MessageOf([&] { ReadCsvFile(dir + "/real.csv", -1, true); }).find("regression"),
            std::string::npos);
  EXPECT_FLOAT_EQ(ReadCsvFile(dir + "/real.csv", -1, false).y[1][0].item<float>(), 1.5f);
}

// The data order does not depend on the split: at every K a step's global batch is the one-rank
// sampler's batch, cut by rank; epochs end at the same step; a cursor goes on at another K.
TEST(ShardSamplerTest, AStepsGlobalBatchIsTheOneRankBatchCutByRank) {
  const int64_t n = 103, batch = 20;  // 5 global batches an epoch, 3 rows skipped
  ShardSampler one(n, 7, 0, 1, batch);
  std::vector<ShardSampler> two, four;
  for (int r = 0; r < 2; ++r) two.emplace_back(n, 7, r, 2, batch / 2);
  for (int r = 0; r < 4; ++r) four.emplace_back(n, 7, r, 4, batch / 4);
  EXPECT_EQ(one.steps_per_epoch(), 5);
  EXPECT_EQ(two[1].steps_per_epoch(), 5);
  EXPECT_EQ(four[3].steps_per_epoch(), 5);
  std::set<int64_t> epoch0;
  torch::Tensor first, sixth;
  for (int step = 1; step <= 7; ++step) {
    const torch::Tensor want = one.Next().clone();
    if (step == 1) first = want;
    if (step == 6) sixth = want;
    std::vector<torch::Tensor> parts2, parts4;
    for (auto& s : two) parts2.push_back(s.Next());
    for (auto& s : four) parts4.push_back(s.Next());
    EXPECT_TRUE(torch::equal(torch::cat(parts2), want)) << step;
    EXPECT_TRUE(torch::equal(torch::cat(parts4), want)) << step;
    EXPECT_EQ(two[0].epoch(), one.epoch());
    EXPECT_EQ(four[2].epoch(), one.epoch());
    if (step <= 5) {
      for (int64_t i = 0; i < batch; ++i) epoch0.insert(want[i].item<int64_t>());
    }
  }
  EXPECT_EQ(epoch0.size(), 100u);  // no row twice in an epoch
  EXPECT_EQ(one.epoch(), 1);       // step 6 started epoch 1, in a new order
  EXPECT_FALSE(torch::equal(first, sixth));
  // A 2-rank cursor after 7 steps goes on at 4 ranks on the one-rank rows.
  const torch::Tensor next = one.Next();
  std::vector<torch::Tensor> parts;
  for (int r = 0; r < 4; ++r) {
    ShardSampler s(n, 99, r, 4, batch / 4);  // another seed: the cursor replaces its order
    s.Restore(two[0].order(), two[0].position(), two[0].epoch());
    parts.push_back(s.Next());
  }
  EXPECT_TRUE(torch::equal(torch::cat(parts), next));
  EXPECT_NE(MessageOf([&] { ShardSampler(10, 1, 0, 2, 6); }).find("batch_size"), std::string::npos);
}

// Format 1's per-rank shards: the global order rebuilt from them reads, split at the same K,
// each rank's own next rows for the rest of the epoch.
TEST(ShardSamplerTest, Format1ShardsBecomeAGlobalOrderReadingTheSameRows) {
  const int64_t n = 23, k = 2, local = 3, position = 3;  // shards of 11 rows: 3 steps an epoch
  const torch::Tensor deal = torch::randperm(n, torch::kInt64);
  std::vector<torch::Tensor> shards;
  for (int64_t r = 0; r < k; ++r) {
    shards.push_back(deal.slice(0, r, n, k).narrow(0, 0, n / k).flip(0).contiguous());
  }
  const torch::Tensor order = ShardSampler::GlobalOrderOfShards(shards, position, local, n);
  EXPECT_TRUE(torch::equal(std::get<0>(order.sort()), torch::arange(n)));  // a permutation
  for (int64_t r = 0; r < k; ++r) {
    ShardSampler s(n, 1, static_cast<int>(r), k, local);
    s.Restore(order, position * k, 0);
    for (int64_t step = 0; step < 2; ++step) {  // 3 - 1 steps left in the epoch
      EXPECT_TRUE(torch::equal(s.Next(), shards[r].narrow(0, position + step * local, local)))
          << r << " " << step;
      EXPECT_EQ(s.epoch(), 0);
    }
    s.Next();
    EXPECT_EQ(s.epoch(), 1);  // where the format-1 shard's epoch ended too
  }
}

}  // namespace
}  // namespace batchlab::runner
