// JSON-lines metrics writer (see metrics_writer.h).
#include "base/elapsed.h"
#include "runner/train/metrics_writer.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "runner/config/runner_error.h"

namespace batchlab::runner {

std::unique_ptr<MetricsWriter> MetricsWriter::Open(const std::string& path) {
  if (path.empty()) return std::unique_ptr<MetricsWriter>(new MetricsWriter(nullptr, path));
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    throw RunnerError(RunnerError::Kind::kInternal,
                      "metrics_path: cannot write \"" + path + "\": " + std::strerror(errno));
  }
  return std::unique_ptr<MetricsWriter>(new MetricsWriter(f, path));
}

MetricsWriter::~MetricsWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

void MetricsWriter::Write(const nlohmann::ordered_json& line) {
  nlohmann::ordered_json out;
  out["seq"] = seq_++;
  for (auto it = line.begin(); it != line.end(); ++it) out[it.key()] = it.value();
  if (file_ == nullptr) return;
  buffer_ = out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  buffer_ += '\n';
  if (std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size() ||
      std::fflush(file_) != 0) {
    throw RunnerError(RunnerError::Kind::kInternal,
                      "metrics_path: writing \"" + path_ + "\" failed: " + std::strerror(errno));
  }
}


}  // namespace batchlab::runner
