// The runner's one error style: throw RunnerError; main() maps it to an exit code and a message
// on stderr prefixed with the rank. kBadConfig exits 2, everything else exits 1 (docs/protocol.md).
#ifndef BATCHLAB_RUNNER_CONFIG_RUNNER_ERROR_H_
#define BATCHLAB_RUNNER_CONFIG_RUNNER_ERROR_H_

#include <stdexcept>
#include <string>
#include <utility>

#include "base/status.h"

namespace batchlab::runner {

class RunnerError : public std::runtime_error {
 public:
  enum class Kind { kBadConfig, kData, kComm, kInternal };
  RunnerError(Kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  Kind kind() const { return kind_; }
  int exit_code() const { return kind_ == Kind::kBadConfig ? 2 : 1; }

 private:
  Kind kind_;
};

inline RunnerError BadConfig(const std::string& message) {
  return RunnerError(RunnerError::Kind::kBadConfig, message);
}

// A value the LibTorch-free layers (base/) computed from the config, or BadConfig with their
// message: `LrSchedule lr = OrBadConfig(LrSchedule::Make(c, batch, steps));`.
template <typename T>
T OrBadConfig(StatusOr<T> value) {
  if (!value.ok()) throw BadConfig(value.status().message());
  return std::move(value).value();
}

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_CONFIG_RUNNER_ERROR_H_
