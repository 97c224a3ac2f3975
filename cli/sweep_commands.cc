#include "cli/commands.h"
namespace batchlab::cli {
void AddSweepCommands(CLI::App& app, CliContext& ctx) {
  auto* sweep = app.add_subcommand("sweep", "Validate, plan and run sweeps");
  AddVersionFlag(*sweep);
  (void)ctx;
}
}  // namespace batchlab::cli
