#include "cli/commands.h"
namespace batchlab::cli {
void AddAnalyzeCommands(CLI::App& app, CliContext& ctx) {
  auto* analyze = app.add_subcommand("analyze", "Noise scale, critical batch, Pareto, scaling");
  AddVersionFlag(*analyze);
  (void)ctx;
}
}  // namespace batchlab::cli
