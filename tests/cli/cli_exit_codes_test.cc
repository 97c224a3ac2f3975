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

// `batchlab analyze critt --help` once printed analyze's help and exited 0, as if `critt` were a
// command: CLI11 answers --help before it looks at the words it could not place. With --help (or
// -h) after an unknown command, every group gives the error it gives without: exit 2, the word
// named, the nearest command suggested, nothing on stdout.
TEST(CliExitCodes, HelpAfterUnknownCommandIsTheSameUsageError) {
  struct Case {
    std::string words;
    std::string says;
  };
  const Case cases[] = {
      {"swep", "unknown command 'swep' for `batchlab`; did you mean 'sweep'?"},
      {"sweep paln", "unknown command 'paln' for `batchlab sweep`; did you mean 'plan'?"},
      {"results lst", "unknown command 'lst' for `batchlab results`; did you mean 'list'?"},
      {"analyze critt", "unknown command 'critt' for `batchlab analyze`; did you mean 'crit'?"},
      {"analyze crit extra", ""},  // a leaf command: `extra` is its own error, not a command
  };
  for (const Case& c : cases) {
    const Result without = RunBatchlab(c.words);
    for (const char* help : {"--help", "-h"}) {
      const Result with = RunBatchlab(c.words + " " + help);
      if (c.says.empty()) {
        // The leaf's help is right here: the word follows a command that exists.
        EXPECT_EQ(with.exit_code, 0) << c.words << " " << help << ": " << with.output;
        continue;
      }
      EXPECT_EQ(with.exit_code, 2) << c.words << " " << help << ": " << with.output;
      EXPECT_EQ(with.output, without.output) << c.words << " " << help;
      EXPECT_NE(with.output.find(c.says), std::string::npos) << c.words << ": " << with.output;
      EXPECT_EQ(with.output.find("Usage"), std::string::npos) << c.words << ": " << with.output;
    }
    if (!c.says.empty()) {
      EXPECT_EQ(without.exit_code, 2) << c.words << ": " << without.output;
    }
  }
  // The option values on the way are skipped as values, not taken for commands.
  const Result r = RunBatchlab("--db x.db analyze critt --help");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("did you mean 'crit'?"), std::string::npos) << r.output;
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
