// Where the running binary is: an installed tree (cmake --install, the .deb) finds its runner,
// its web assets and its data beside it, so every "relative to my own binary" lookup starts here.
//
//   const std::string self = SelfExecutable();   // "/opt/batchlab/bin/batchlab", or "" if unknown
//
// Header only: the CLI, the orchestrator and the analysis use it.
#ifndef BATCHLAB_BASE_SELF_EXECUTABLE_H_
#define BATCHLAB_BASE_SELF_EXECUTABLE_H_

#include <filesystem>
#include <string>
#include <system_error>

namespace batchlab {

// The absolute path of the running executable (Linux: /proc/self/exe), or "" where it cannot be
// read.
inline std::string SelfExecutable() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : self.string();
}

}  // namespace batchlab

#endif  // BATCHLAB_BASE_SELF_EXECUTABLE_H_
