#include "cli/commands.h"
namespace batchlab::cli {
void AddReportCommand(CLI::App& app, CliContext& ctx) {
  auto* report = app.add_subcommand("report", "Write a scaling report (HTML, Markdown, CSV)");
  AddVersionFlag(*report);
  (void)ctx;
}
}  // namespace batchlab::cli
