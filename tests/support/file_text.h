// A whole file as a string, and a string as a whole file: what tests read back (metrics, reports,
// stderr, configs) and the inputs they write.
//
//   const std::string report = batchlab::testing::ReadFileText(dir.File("report.md"));
//   batchlab::testing::WriteFileText(dir.File("spec.json"), R"({"name": "s"})");
//
// A file that cannot be opened reads as "" (the assertion on its content then fails and shows it).
#ifndef BATCHLAB_TESTS_SUPPORT_FILE_TEXT_H_
#define BATCHLAB_TESTS_SUPPORT_FILE_TEXT_H_

#include <fstream>
#include <iterator>
#include <string>

namespace batchlab::testing {

inline std::string ReadFileText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// `text` as the whole file at `path` (replaced), or appended to it.
inline void WriteFileText(const std::string& path, const std::string& text, bool append = false) {
  std::ofstream out(path, std::ios::binary | (append ? std::ios::app : std::ios::trunc));
  out << text;
}

}  // namespace batchlab::testing

#endif  // BATCHLAB_TESTS_SUPPORT_FILE_TEXT_H_
