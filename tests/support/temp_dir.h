// A fresh directory under the system temp dir for one test, removed (recursively) when the test
// ends. Every area's tests work on real files (SQLite databases, metrics, specs) in one.
//
//   batchlab::testing::TempDir dir;
//   std::string db = dir.File("batchlab.db");   // == dir.path() + "/batchlab.db"
#ifndef BATCHLAB_TESTS_SUPPORT_TEMP_DIR_H_
#define BATCHLAB_TESTS_SUPPORT_TEMP_DIR_H_

#include <stdlib.h>

#include <filesystem>
#include <string>

namespace batchlab::testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "batchlab-test-XXXXXX").string();
    char* made = mkdtemp(pattern.data());
    path_ = made != nullptr ? made : pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace batchlab::testing

#endif  // BATCHLAB_TESTS_SUPPORT_TEMP_DIR_H_
