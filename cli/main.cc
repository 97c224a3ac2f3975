// `batchlab`: thin glue over the orchestrator, results and analysis libraries.
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "cli/commands.h"
#include "cli/usage_error.h"
#include "cli/version.h"

int main(int argc, char** argv) {
  using namespace batchlab::cli;
  CLI::App app{"batchlab: large-batch scaling studies of neural-network training"};
  app.set_version_flag("--version", std::string("batchlab ") + kVersion);
  app.require_subcommand(1);
  // Global options may come before or after the subcommand: subcommands (which inherit this
  // setting) pass options they do not know up to the app.
  app.fallthrough();
  app.footer("Global options (before or after the subcommand): --db PATH (or $BATCHLAB_DB)");
  CliContext ctx;
  app.add_option("--db", ctx.db_path, "SQLite results database (global)")
      ->capture_default_str()
      ->envname("BATCHLAB_DB");
  AddSweepCommands(app, ctx);
  AddResultsCommands(app, ctx);
  AddAnalyzeCommands(app, ctx);
  AddReportCommand(app, ctx);
  AddUiCommand(app, ctx);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    // --help after a word that is no command: the usage error it is without --help.
    const std::vector<std::string> args(argv + 1, argv + argc);
    if (const std::optional<std::string> unknown = UnknownCommandMessage(app, args)) {
      fmt::print(stderr, "batchlab: error: {}\n", *unknown);
      return 2;
    }
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Usage error (bad input): one error style, the command named, the nearest valid word.
    const std::vector<std::string> args(argv + 1, argv + argc);
    fmt::print(stderr, "batchlab: error: {}\n", UsageErrorMessage(app, e, args));
    return 2;
  }
  if (!ctx.status.ok()) {
    fmt::print(stderr, "batchlab: error: {}\n", ctx.status.message());
    // Stopped by SIGINT/SIGTERM: the shell convention 128 + signal (130 for Ctrl-C).
    if (ctx.stopped_by_signal > 0) return 128 + ctx.stopped_by_signal;
    return batchlab::ExitCodeFor(ctx.status);
  }
  // A view the user stopped (Ctrl-C of `ui`, `sweep status --watch`): 128 + signal, quietly.
  if (ctx.stopped_by_signal > 0) return 128 + ctx.stopped_by_signal;
  return 0;
}
