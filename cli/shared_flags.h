// The flags several subcommands share (`--version`, `--format`, the study options), each added by
// one function so every subcommand spells them alike.
//
//   AddVersionFlag(*cmd);
//   AddFormatOption(*cmd, flags->format, {"table", "json"}, "table or json");
#ifndef BATCHLAB_CLI_SHARED_FLAGS_H_
#define BATCHLAB_CLI_SHARED_FLAGS_H_

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "analysis/sections/study.h"

namespace batchlab::cli {

// Adds `--version` to a subcommand (CLI11 puts it on the top-level app only).
void AddVersionFlag(CLI::App& app);

// Adds `--format` (default "table") accepting `allowed`: the one output flag of every command
// that prints data.
CLI::Option* AddFormatOption(CLI::App& cmd, std::string& format,
                             const std::vector<std::string>& allowed, const std::string& help);

// The flag groups of the study options (analyze subcommands and report take what they read).
enum StudyFlagGroup : unsigned {
  kTargetFlag = 1,        // --target
  kGnsFlags = 2,          // --beta --from-step --to-step --at-step
  kBootstrapFlags = 4,    // --resamples --confidence --seed
  kTimingFlags = 8,       // --skip-steps --parameters
  kProjectionFlags = 16,  // --profile --max-nodes --device-speedup
  kPreferFlag = 32,       // --prefer
  kAllStudyFlags = 63,
};
void AddStudyFlags(CLI::App& cmd, analysis::StudyOptions& o, unsigned groups);

}  // namespace batchlab::cli

#endif  // BATCHLAB_CLI_SHARED_FLAGS_H_
