#include "orchestrator/sweep_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <boost/filesystem.hpp>

namespace batchlab::orchestrator {

StatusOr<SweepLock> SweepLock::Acquire(const std::string& dir) {
  boost::system::error_code ec;
  boost::filesystem::create_directories(dir, ec);
  if (ec) return InternalError(fmt::format("cannot create {}: {}", dir, ec.message()));
  std::string path = dir + "/.lock";
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return InternalError(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    close(fd);
    if (err == EWOULDBLOCK) {
      return FailedPreconditionError(fmt::format(
          "another batchlab is running this sweep (lock {} is held); wait for it or stop it",
          path));
    }
    return InternalError(fmt::format("cannot lock {}: {}", path, std::strerror(err)));
  }
  return SweepLock(fd);
}

SweepLock::SweepLock(SweepLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

SweepLock& SweepLock::operator=(SweepLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

SweepLock::~SweepLock() {
  if (fd_ >= 0) close(fd_);
}

}  // namespace batchlab::orchestrator
