// WriteFileAtomically (see atomic_file.h).
#include "base/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

namespace batchlab {
namespace {

std::string TempName(const std::string& path, const AtomicWrite& how) {
  if (!how.unique_temp) return path + how.temp_suffix;
  static std::atomic<int> counter{0};
  return fmt::format("{}{}-{}-{}", path, how.temp_suffix, ::getpid(), counter++);
}

// fsync of the folder that holds `path`, so that a rename into it is on disk.
void SyncFolderOf(const std::string& path) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  if (const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

}  // namespace

Status WriteFileAtomically(const std::string& path, const std::function<Status(std::FILE*)>& write,
                           const AtomicWrite& how) {
  const std::string tmp = TempName(path, how);
  std::FILE* file = std::fopen(tmp.c_str(), how.unique_temp ? "wbxe" : "wbe");  // x: exclusive
  if (file == nullptr) {
    return FailedPreconditionError(fmt::format("cannot create {}: {}", tmp, std::strerror(errno)));
  }
  Status written = write(file);
  bool write_failed = std::ferror(file) != 0;
  int write_errno = errno;
  if (written.ok() && !write_failed && how.durable &&
      (std::fflush(file) != 0 || ::fsync(::fileno(file)) != 0)) {
    write_failed = true;
    write_errno = errno;
  }
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
  if (how.durable) SyncFolderOf(path);  // the rename itself survives a crash
  return OkStatus();
}

Status WriteFileAtomically(const std::string& path, const std::string& text,
                           const AtomicWrite& how) {
  return WriteFileAtomically(
      path,
      [&](std::FILE* file) {
        std::fwrite(text.data(), 1, text.size(), file);  // a short write shows in ferror
        return OkStatus();
      },
      how);
}

}  // namespace batchlab
