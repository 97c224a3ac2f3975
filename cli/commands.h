// The `batchlab` command line: one registration function per subcommand group, each in its own
// file next to this header. main.cc wires them into one CLI11 app and turns the outcome into the
// process exit code (0 ok, 1 failure, 2 bad input; see base/status.h ExitCodeFor).
#ifndef BATCHLAB_CLI_COMMANDS_H_
#define BATCHLAB_CLI_COMMANDS_H_

#include <string>

#include <CLI/CLI.hpp>

#include "base/status.h"

namespace batchlab::cli {

// Options every subcommand sees, and the status the chosen subcommand ended with.
struct CliContext {
  std::string db_path = "batchlab.db";  // --db, global
  Status status;                        // set by the subcommand that ran
  int stopped_by_signal = 0;            // SIGINT/SIGTERM that stopped it: exit 128 + signal
};

void AddSweepCommands(CLI::App& app, CliContext& ctx);    // sweep run|plan|status   (orchestrator)
void AddResultsCommands(CLI::App& app, CliContext& ctx);  // results list|show|query|export
void AddAnalyzeCommands(CLI::App& app, CliContext& ctx);  // analyze gns|...|project|recommend
void AddReportCommand(CLI::App& app, CliContext& ctx);    // report
void AddUiCommand(CLI::App& app, CliContext& ctx);        // ui (ui_command.cc)

}  // namespace batchlab::cli

#endif  // BATCHLAB_CLI_COMMANDS_H_
