// A job's stderr copied to stderr.log without mpirun's notice about protocol exit codes (see
// stderr_copier.h).
#include "orchestrator/process/stderr_copier.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

namespace batchlab::orchestrator {
namespace {

// mpirun's frame: a line of dashes (Open MPI prints 74).
bool IsRule(std::string_view line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  return line.size() >= 20 && line.find_first_not_of('-') == std::string_view::npos;
}

// The notices Open MPI prints when a rank exits with a code other than 0.
bool IsExitNotice(const std::string& block) {
  return block.find("returned\na non-zero exit code") != std::string::npos ||
         block.find("exited with non-zero status") != std::string::npos;
}

}  // namespace

std::string MpirunNoticeFilter::Feed(std::string_view text) {
  std::string out;
  partial_.append(text);
  size_t start = 0;
  for (size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1) {
    out += Line(partial_.substr(start, nl + 1 - start));
  }
  partial_.erase(0, start);
  return out;
}

std::string MpirunNoticeFilter::Line(std::string line) {
  if (!in_block_) {
    if (!IsRule(line)) return line;
    in_block_ = true;
    block_ = std::move(line);
    return "";
  }
  block_ += line;
  if (!IsRule(line)) return "";
  in_block_ = false;
  std::string block = std::move(block_);
  block_.clear();
  if (!IsExitNotice(block)) return block;
  held_ += block;
  return "";
}

std::string MpirunNoticeFilter::Finish(bool drop_exit_notices) {
  std::string out = drop_exit_notices ? "" : held_;
  out += block_ + partial_;  // an unclosed frame or an unended line: as written
  held_.clear();
  block_.clear();
  partial_.clear();
  in_block_ = false;
  return out;
}

StderrCopier::StderrCopier(int fd, const std::string& path)
    : fd_(fd), file_(std::fopen(path.c_str(), "wb")) {
  thread_ = std::thread([this] { Copy(); });
}

StderrCopier::~StderrCopier() { Finish(false); }

void StderrCopier::Copy() {
  char buf[8192];
  auto quiet_since = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point ending_since{};
  while (true) {
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, 100);
    if (ready < 0 && errno == EINTR) continue;
    if (ready > 0) {
      const ssize_t n = ::read(fd_, buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // every writer closed it (or it broke): done
      std::lock_guard<std::mutex> lock(mu_);
      const std::string out = filter_.Feed(std::string_view(buf, static_cast<size_t>(n)));
      if (file_ != nullptr && !out.empty()) {
        std::fwrite(out.data(), 1, out.size(), file_);
        std::fflush(file_);
      }
      quiet_since = std::chrono::steady_clock::now();
      continue;
    }
    // A process that outlived the job may hold the pipe open: once the job ended, stop after a
    // quiet half second (at most 5 s) rather than wait for it.
    if (ending_) {
      const auto now = std::chrono::steady_clock::now();
      if (ending_since == std::chrono::steady_clock::time_point{}) ending_since = now;
      if (now - quiet_since > std::chrono::milliseconds(500) ||
          now - ending_since > std::chrono::seconds(5)) {
        return;
      }
    }
  }
}

void StderrCopier::Finish(bool drop_exit_notices) {
  if (finished_) return;
  finished_ = true;
  ending_ = true;
  if (thread_.joinable()) thread_.join();
  ::close(fd_);
  std::lock_guard<std::mutex> lock(mu_);
  const std::string rest = filter_.Finish(drop_exit_notices);
  if (file_ != nullptr) {
    std::fwrite(rest.data(), 1, rest.size(), file_);
    std::fclose(file_);
    file_ = nullptr;
  }
}

}  // namespace batchlab::orchestrator
