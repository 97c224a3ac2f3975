// Test files for the results tests: the shared TempDir (tests/support/temp_dir.h) and small
// whole-file read/write helpers. Every results test works on real SQLite files in a TempDir.
#ifndef BATCHLAB_TESTS_RESULTS_TEMP_DIR_H_
#define BATCHLAB_TESTS_RESULTS_TEMP_DIR_H_

#include <fstream>
#include <iterator>
#include <string>

#include "tests/support/temp_dir.h"

namespace batchlab::results::testing {

using TempDir = ::batchlab::testing::TempDir;

inline void WriteFile(const std::string& path, const std::string& text, bool append = false) {
  std::ofstream out(path, std::ios::binary | (append ? std::ios::app : std::ios::trunc));
  out << text;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace batchlab::results::testing

#endif  // BATCHLAB_TESTS_RESULTS_TEMP_DIR_H_
