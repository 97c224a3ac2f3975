// `batchlab report --sweep NAME --out DIR`: every analysis of one sweep as report.html,
// report.md and one CSV per table (analysis/report/report.h). Reads the database read-only.
//
//   batchlab --db batchlab.db report --sweep quickstart --out report/
#include <memory>
#include <string>

#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include "analysis/report/report.h"
#include "analysis/data/sweep_data.h"
#include "cli/commands.h"
#include "cli/shared_flags.h"

namespace batchlab::cli {

namespace {

struct ReportFlags {
  std::string sweep;
  int version = 0;
  std::string out = "report";
  analysis::StudyOptions study;
};

Status Run(const ReportFlags& f, const std::string& db_path) {
  using namespace analysis;
  if (!f.study.target.empty()) BATCHLAB_RETURN_IF_ERROR(ParseTarget(f.study.target).status());
  if (!(f.study.beta >= 0 && f.study.beta < 1)) {
    return InvalidArgumentError(
        fmt::format("--beta {} must be in [0, 1), e.g. 0.99", f.study.beta));
  }
  BATCHLAB_RETURN_IF_ERROR(FindClusterProfile(f.study.profile).status());
  LoadOptions load;
  load.version = f.version;  // every metric: the configured target may name any of them
  BATCHLAB_ASSIGN_OR_RETURN(SweepData sweep, LoadSweep(db_path, f.sweep, load));
  BATCHLAB_ASSIGN_OR_RETURN(Study study, RunStudy(sweep, f.study));
  for (const std::string& w : study.target.warnings) {
    fmt::print(stderr, "batchlab: warning: {}\n", w);
  }
  BATCHLAB_ASSIGN_OR_RETURN(std::vector<std::string> files, WriteReport(study, f.out));
  fmt::print("Sweep {} (version {}, {} runs)\n", sweep.name, sweep.version, sweep.runs.size());
  for (const std::string& line : Summary(study)) fmt::print("  {}\n", line);
  if (!study.recommendation.measured.empty()) {
    fmt::print("Recommendation (prefer {}):\n", PreferenceName(study.recommendation.prefer));
    for (const std::string& line : RecommendationLines(study.recommendation)) {
      fmt::print("  {}\n", line);
    }
  }
  std::string html = f.out;
  for (const std::string& p : files) {
    if (p.size() >= 11 && p.compare(p.size() - 11, 11, "report.html") == 0) html = p;
  }
  fmt::print("Report: {} ({} files in {})\n", html, files.size(), f.out);
  return OkStatus();
}

}  // namespace

void AddReportCommand(CLI::App& app, CliContext& ctx) {
  auto* report = app.add_subcommand("report", "Write a scaling report (HTML, Markdown, CSV)");
  AddVersionFlag(*report);
  auto flags = std::make_shared<ReportFlags>();
  report->add_option("--sweep", flags->sweep, "Sweep name")->required();
  report->add_option("--sweep-version", flags->version, "Sweep version (default: the latest)")
      ->check(CLI::PositiveNumber);
  report->add_option("--out", flags->out, "Output directory (created if absent)")
      ->capture_default_str();
  AddStudyFlags(*report, flags->study, kAllStudyFlags);
  report->callback([flags, &ctx] { ctx.status = Run(*flags, ctx.db_path); });
}

}  // namespace batchlab::cli
