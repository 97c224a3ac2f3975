// The message of the RunnerError (exit code 2) that parsing a run config throws, "" if it parses:
// one helper for the runner's config tests (run_config_test.cc, registry_test.cc).
#ifndef BATCHLAB_TESTS_RUNNER_CONFIG_CONFIG_ERROR_OF_H_
#define BATCHLAB_TESTS_RUNNER_CONFIG_CONFIG_ERROR_OF_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "runner/config/run_config.h"
#include "runner/config/runner_error.h"

namespace batchlab::runner {

inline std::string ErrorOf(const nlohmann::json& j, int64_t world = 1) {
  try {
    ParseRunConfig(j, world);
  } catch (const RunnerError& e) {
    EXPECT_EQ(e.exit_code(), 2) << e.what();
    return e.what();
  }
  return "";
}

}  // namespace batchlab::runner

#endif  // BATCHLAB_TESTS_RUNNER_CONFIG_CONFIG_ERROR_OF_H_
