// The `batchlab` binary's top-level contract: --help/--version exit 0 on every subcommand group,
// usage errors exit 2 with a message on stderr.
#include <string>

#include <gtest/gtest.h>

#include "tests/support/run_command.h"

namespace {

using Result = batchlab::testing::CommandResult;

Result RunBatchlab(const std::string& args) {
  return batchlab::testing::RunCommand(std::string(BATCHLAB_BINARY) + " " + args);
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
