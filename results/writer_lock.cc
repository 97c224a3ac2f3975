// The database's single-writer lock; see writer_lock.h.
#include "results/writer_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include <fmt/core.h>

namespace batchlab::results {
namespace {

std::string ReadAll(int fd) {
  std::string out;
  char buf[64];
  ssize_t n = 0;
  lseek(fd, 0, SEEK_SET);
  while ((n = read(fd, buf, sizeof(buf))) > 0 && out.size() < 256) out.append(buf, n);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

}  // namespace

StatusOr<WriterLock> WriterLock::Acquire(const std::string& database_path) {
  const std::string path = LockPath(database_path);
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return FailedPreconditionError(fmt::format("cannot open the database's lock file {}: {}",
                                               path, std::strerror(errno)));
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    const std::string holder = ReadAll(fd);
    close(fd);
    if (err == EWOULDBLOCK) {
      return FailedPreconditionError(fmt::format(
          "another batchlab is writing the database {} ({}; lock {}): one writer at a time; wait "
          "for it to finish or stop it",
          database_path, holder.empty() ? "pid unknown" : holder, path));
    }
    return InternalError(fmt::format("cannot lock {}: {}", path, std::strerror(err)));
  }
  const std::string me = fmt::format("pid {}\n", getpid());
  if (ftruncate(fd, 0) == 0) {
    ssize_t ignored = pwrite(fd, me.data(), me.size(), 0);
    (void)ignored;
  }
  return WriterLock(fd);
}

WriterLock& WriterLock::operator=(WriterLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

WriterLock::~WriterLock() {
  if (fd_ >= 0) close(fd_);
}

}  // namespace batchlab::results
