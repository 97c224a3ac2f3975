// The flags several subcommands share: see shared_flags.h.
#include "cli/shared_flags.h"

#include <fmt/core.h>

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

CLI::Option* AddFormatOption(CLI::App& cmd, std::string& format,
                             const std::vector<std::string>& allowed, const std::string& help) {
  return cmd.add_option("--format", format, help)
      ->capture_default_str()
      ->check(CLI::IsMember(allowed));
}


void AddStudyFlags(CLI::App& cmd, analysis::StudyOptions& o, unsigned groups) {
  if (groups & kTargetFlag) {
    cmd.add_option("--target", o.target,
                   "Target as METRIC OP VALUE, e.g. 'test_accuracy>=0.85' (default: the sweep's)");
  }
  if (groups & kGnsFlags) {
    cmd.add_option("--beta", o.beta, "EMA smoothing of the GNS series, in [0, 1)")
        ->capture_default_str();
    cmd.add_option("--from-step", o.from_step, "First step of the GNS estimate window")
        ->capture_default_str();
    cmd.add_option("--to-step", o.to_step, "Last step of the GNS estimate window (default: end)");
    cmd.add_option("--at-step", o.at_step,
                   "GNS at a chosen step: the window of the EMA's memory ending there")
        ->check(CLI::PositiveNumber);
  }
  if (groups & kBootstrapFlags) {
    cmd.add_option("--resamples", o.resamples, "Bootstrap resamples")
        ->capture_default_str()
        ->check(CLI::Range(10, 1000000));
    cmd.add_option("--confidence", o.confidence, "Confidence level of the intervals")
        ->capture_default_str()
        ->check(CLI::Range(0.5, 0.999));
    cmd.add_option("--seed", o.seed, "Seed of the bootstrap")->capture_default_str();
  }
  if (groups & kTimingFlags) {
    cmd.add_option("--skip-steps", o.skip_steps, "Warm-up steps left out of timing averages")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    cmd.add_option("--parameters", o.parameters, "Model size in scalars (default: from the runs)")
        ->check(CLI::NonNegativeNumber);
  }
  if (groups & kProjectionFlags) {
    cmd.add_option("--profile", o.profile, "Cluster profile: ib-100g, ib-400g, nvlink, eth-10g")
        ->capture_default_str();
    cmd.add_option("--max-nodes", o.max_world_size, "Largest projected world size")
        ->capture_default_str()
        ->check(CLI::Range(1, 1 << 20));
    cmd.add_option("--device-speedup", o.device_speedup,
                   "How many times faster the projected device computes than this machine")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    cmd.add_option("--min-local-batch", o.min_local_batch,
                   "Smallest local batch per rank a projection may use unless it was measured "
                   "(default: the smallest measured)")
        ->check(CLI::NonNegativeNumber);
  }
  if (groups & kPreferFlag) {
    cmd.add_option("--prefer", o.prefer,
                   "What the recommendation optimises: time, compute or balanced (least "
                   "time x compute)")
        ->capture_default_str()
        ->check(CLI::IsMember({"time", "compute", "balanced"}));
  }
}

}  // namespace batchlab::cli
