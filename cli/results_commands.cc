#include "cli/commands.h"
namespace batchlab::cli {
void AddResultsCommands(CLI::App& app, CliContext& ctx) {
  auto* results = app.add_subcommand("results", "List, show, query and export results");
  AddVersionFlag(*results);
  (void)ctx;
}
}  // namespace batchlab::cli
