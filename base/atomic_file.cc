// WriteFileAtomically (see atomic_file.h).
#include "base/atomic_file.h"

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace batchlab {

Status WriteFileAtomically(const std::string& path, const std::function<Status(std::FILE*)>& write,
                           const std::string& temp_suffix) {
  const std::string tmp = path + temp_suffix;
  std::FILE* file = std::fopen(tmp.c_str(), "wb");
  if (file == nullptr) {
    return FailedPreconditionError(fmt::format("cannot create {}: {}", tmp, std::strerror(errno)));
  }
  Status written = write(file);
  const bool write_failed = std::ferror(file) != 0;
  const int write_errno = errno;
  const bool close_failed = std::fclose(file) != 0;
  const int close_errno = errno;
  if (!written.ok() || write_failed || close_failed) {
    std::remove(tmp.c_str());
    if (!written.ok()) return written;
    return InternalError(fmt::format("cannot write {}: {} (is the disk full?)", tmp,
                                     std::strerror(write_failed ? write_errno : close_errno)));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int rename_errno = errno;
    std::remove(tmp.c_str());
    return InternalError(
        fmt::format("cannot rename {} to {}: {}", tmp, path, std::strerror(rename_errno)));
  }
  return OkStatus();
}

Status WriteFileAtomically(const std::string& path, const std::string& text,
                           const std::string& temp_suffix) {
  return WriteFileAtomically(
      path,
      [&](std::FILE* file) {
        std::fwrite(text.data(), 1, text.size(), file);  // a short write shows in ferror
        return OkStatus();
      },
      temp_suffix);
}

}  // namespace batchlab
