// A fresh directory under /tmp for one test, removed (recursively) when the test ends.
//
//   TempDir dir;
//   std::string db = dir.path() + "/batchlab.db";
#ifndef BATCHLAB_TESTS_ORCHESTRATOR_TEMP_DIR_H_
#define BATCHLAB_TESTS_ORCHESTRATOR_TEMP_DIR_H_

#include <string>

#include <boost/filesystem.hpp>

namespace batchlab::orchestrator::testing {

class TempDir {
 public:
  TempDir() {
    path_ = (boost::filesystem::temp_directory_path() /
             boost::filesystem::unique_path("batchlab-orch-%%%%-%%%%-%%%%"))
                .string();
    boost::filesystem::create_directories(path_);
  }
  ~TempDir() {
    boost::system::error_code ec;
    boost::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace batchlab::orchestrator::testing

#endif  // BATCHLAB_TESTS_ORCHESTRATOR_TEMP_DIR_H_
