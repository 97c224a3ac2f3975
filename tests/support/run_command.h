// Runs a shell command line in tests: its exit code and its stdout and stderr together.
//
//   CommandResult r = RunCommand(std::string(BATCHLAB_BINARY) + " sweep plan s.json");
//   EXPECT_EQ(r.exit_code, 2) << r.output;
#ifndef BATCHLAB_TESTS_SUPPORT_RUN_COMMAND_H_
#define BATCHLAB_TESTS_SUPPORT_RUN_COMMAND_H_

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

namespace batchlab::testing {

struct CommandResult {
  int exit_code = -1;  // -1: killed by a signal
  std::string output;  // stdout and stderr together
};

inline CommandResult RunCommand(const std::string& command) {
  const std::string cmd = command + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  EXPECT_NE(pipe, nullptr) << cmd;
  if (pipe == nullptr) return {};
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace batchlab::testing

#endif  // BATCHLAB_TESTS_SUPPORT_RUN_COMMAND_H_
