// The `batchlab` binary's top-level contract: --help/--version exit 0 on every subcommand group,
// usage errors exit 2 with a message on stderr.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

namespace {

struct Result {
  int exit_code;
  std::string output;  // stdout and stderr together
};

Result RunBatchlab(const std::string& args) {
  std::string cmd = std::string(BATCHLAB_BINARY) + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  EXPECT_NE(pipe, nullptr);
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

TEST(CliExitCodes, VersionOnTopLevelAndEveryGroup) {
  for (const char* group : {"", "sweep", "results", "analyze", "report"}) {
    Result r = RunBatchlab(std::string(group) + " --version");
    EXPECT_EQ(r.exit_code, 0) << group << ": " << r.output;
    EXPECT_NE(r.output.find("batchlab 0."), std::string::npos) << group << ": " << r.output;
  }
}

TEST(CliExitCodes, HelpOnTopLevelAndEveryGroup) {
  for (const char* group : {"", "sweep", "results", "analyze", "report"}) {
    Result r = RunBatchlab(std::string(group) + " --help");
    EXPECT_EQ(r.exit_code, 0) << group << ": " << r.output;
    EXPECT_NE(r.output.find("Usage"), std::string::npos) << group << ": " << r.output;
  }
}

TEST(CliExitCodes, MissingSubcommandIsUsageError) {
  Result r = RunBatchlab("");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("subcommand"), std::string::npos) << r.output;
}

TEST(CliExitCodes, UnknownOptionIsUsageError) {
  Result r = RunBatchlab("sweep plan --no-such-flag spec.json");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--no-such-flag"), std::string::npos) << r.output;
}

}  // namespace
