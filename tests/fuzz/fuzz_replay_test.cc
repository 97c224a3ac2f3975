// Every input the fuzzers start from or ever crashed on, replayed in the normal build: the seed
// corpora (fuzz/corpus/), the hostile specs, the example specs, and fuzz/regressions/ (where a
// crash input found by scripts/sanitize.sh is kept, named after what it found).
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fuzz/fuzz_inputs.h"

#include "tests/support/file_text.h"

namespace batchlab::fuzz {
namespace {

using ::batchlab::testing::ReadFileText;

namespace fs = std::filesystem;

std::vector<fs::path> FilesIn(const std::string& dir) {
  std::vector<fs::path> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().filename().string()[0] != '.') out.push_back(e.path());
  }
  return out;
}

TEST(FuzzReplayTest, SpecInputs) {
  size_t n = 0;
  for (const std::string& dir :
       {std::string(FUZZ_DIR) + "/corpus/spec", std::string(FUZZ_DIR) + "/regressions/spec",
        std::string(HOSTILE_DIR), std::string(SWEEPS_DIR)}) {
    for (const fs::path& p : FilesIn(dir)) {
      if (p.extension() == ".tsv") continue;
      EXPECT_EQ(FuzzSpecText(ReadFileText(p)), "") << p;
      ++n;
    }
  }
  EXPECT_GE(n, 150u);
}

TEST(FuzzReplayTest, MetricsLineInputs) {
  size_t n = 0;
  for (const std::string& dir : {std::string(FUZZ_DIR) + "/corpus/metrics_line",
                                 std::string(FUZZ_DIR) + "/regressions/metrics_line"}) {
    for (const fs::path& p : FilesIn(dir)) {
      EXPECT_EQ(FuzzMetricsLine(ReadFileText(p)), "") << p;
      ++n;
    }
  }
  EXPECT_GE(n, 10u);
}

// The checks themselves can fail: a parser that answered differently would be caught.
TEST(FuzzReplayTest, ChecksAcceptGoodInputs) {
  EXPECT_EQ(FuzzSpecText(R"({"name": "s", "base": {"batch_size": 64, "mode": "noop"},
                             "axes": {"nodes": [1, 2]}})"),
            "");
  EXPECT_EQ(FuzzMetricsLine(R"({"seq":3,"kind":"step","step":2,"loss":0.5})"), "");
}

}  // namespace
}  // namespace batchlab::fuzz
