// `batchlab`: thin glue over the orchestrator, results and analysis libraries.
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "cli/commands.h"
#include "cli/version.h"

namespace batchlab::cli {

void AddVersionFlag(CLI::App& app) {
  app.add_flag_callback(
      "--version",
      [] {
        fmt::print("batchlab {}\n", kVersion);
        throw CLI::Success();
      },
      "Print the version and exit");
}

}  // namespace batchlab::cli

int main(int argc, char** argv) {
  using namespace batchlab::cli;
  CLI::App app{"batchlab: large-batch scaling studies of neural-network training"};
  app.set_version_flag("--version", std::string("batchlab ") + kVersion);
  app.require_subcommand(1);
  CliContext ctx;
  app.add_option("--db", ctx.db_path, "SQLite results database")
      ->capture_default_str()
      ->envname("BATCHLAB_DB");
  AddSweepCommands(app, ctx);
  AddResultsCommands(app, ctx);
  AddAnalyzeCommands(app, ctx);
  AddReportCommand(app, ctx);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;  // usage error: bad input
  }
  if (!ctx.status.ok()) {
    fmt::print(stderr, "batchlab: error: {}\n", ctx.status.message());
    return batchlab::ExitCodeFor(ctx.status);
  }
  return 0;
}
