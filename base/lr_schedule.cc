// LR rule, warmup and decay (see lr_schedule.h; formulas and citations in docs/runner-comm.md).
#include "base/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <utility>

#include "base/run_values.h"

namespace batchlab::run_values {
namespace {

constexpr double kPi = 3.14159265358979323846;

// Single values are checked against the declaration when a config is parsed (the runner's
// run_config.h); this module checks them again, with the messages the Python client's lr.py
// mirrors word for word (lr_parity_test), because it is also used on its own
// (tests/clients/lr_schedule_print.cc). The first failed check's message, or "".
std::string Validate(const LrConfig& c, int64_t global_batch, int64_t total_steps,
                     int64_t steps_per_epoch) {
  if (!std::isfinite(c.base) || c.base <= 0) return "lr.base: must be a positive number";
  if (c.base_batch_size <= 0) return "lr.base_batch_size: must be a positive integer";
  if (global_batch <= 0) return "batch_size: must be a positive integer";
  if (c.warmup_steps < 0) return "lr.warmup_steps: must be >= 0";
  if (!std::isfinite(c.warmup_epochs) || c.warmup_epochs < 0)
    return "lr.warmup_epochs: must be >= 0";
  if (c.warmup_steps > 0 && c.warmup_epochs > 0) {
    return "lr.warmup_epochs: set either lr.warmup_steps or lr.warmup_epochs, not both";
  }
  if (c.warmup_epochs != 0 && steps_per_epoch <= 0) {
    return "lr.warmup_epochs: the number of steps per epoch is unknown; use lr.warmup_steps";
  }
  if (c.warmup_start_fraction &&
      (!std::isfinite(*c.warmup_start_fraction) || *c.warmup_start_fraction < 0 ||
       *c.warmup_start_fraction > 1)) {
    return "lr.warmup_start_fraction: must be in [0, 1]";
  }
  const std::string& s = c.schedule;
  if (s != "constant" && s != "step" && s != "cosine" && s != "poly") {
    return "lr.schedule: unknown schedule \"" + s + "\"; use one of constant, step, cosine, poly";
  }
  if (s == "step") {
    if (!std::isfinite(c.gamma) || c.gamma <= 0) return "lr.gamma: must be a positive number";
    if (c.milestones.empty())
      return "lr.milestones: the step schedule needs at least one milestone";
    for (size_t i = 0; i < c.milestones.size(); ++i) {
      if (c.milestones[i] < 0 || (i > 0 && c.milestones[i] <= c.milestones[i - 1])) {
        return "lr.milestones: must be non-negative steps in increasing order";
      }
    }
  }
  if (s == "cosine" || s == "poly") {
    if (total_steps <= 0) {
      return "lr.schedule: \"" + s +
             "\" decays to the end of training, so it needs a budget in steps, epochs or samples "
             "(not only seconds)";
    }
    const double f = c.final_lr_fraction;
    if (!std::isfinite(f) || f < 0 || f > 1) return "lr.final_lr_fraction: must be in [0, 1]";
  }
  if (s == "poly" && (!std::isfinite(c.power) || c.power <= 0)) return "lr.power: must be positive";
  return "";
}

}  // namespace

StatusOr<LrSchedule> LrSchedule::Make(const LrConfig& config, int64_t global_batch,
                                      int64_t total_steps, int64_t steps_per_epoch) {
  if (std::string why = Validate(config, global_batch, total_steps, steps_per_epoch);
      !why.empty()) {
    return Status(StatusCode::kInvalidArgument, std::move(why));
  }
  LrSchedule s(config, total_steps);
  // The peak LR: base scaled from base_batch_size to the run's global batch by the named rule.
  const auto scaled = ScaledLr(config.base, global_batch, config.base_batch_size, config.rule);
  if (!scaled) {
    return Status(StatusCode::kInvalidArgument,
                  "lr.rule: unknown rule \"" + config.rule + "\"; use one of none, linear, sqrt");
  }
  s.scaled_ = *scaled;
  s.warmup_steps_ = config.warmup_steps;
  if (config.warmup_epochs > 0) {
    s.warmup_steps_ = static_cast<int64_t>(
        std::llround(config.warmup_epochs * static_cast<double>(steps_per_epoch)));
  }
  if (total_steps > 0 && s.warmup_steps_ >= total_steps &&
      (config.schedule == "cosine" || config.schedule == "poly")) {
    std::ostringstream msg;
    msg << "lr.warmup_steps: warmup (" << s.warmup_steps_
        << " steps) must end before the last step (" << total_steps << ") for the \""
        << config.schedule << "\" schedule";
    return Status(StatusCode::kInvalidArgument, msg.str());
  }
  return s;
}

double LrSchedule::At(int64_t step) const {
  step = std::max<int64_t>(step, 0);
  // Gradual warmup (Goyal et al. 2017): from the base LR at step 0 (or the stated fraction of the
  // scaled LR: the only warmup under rule none, whose scaled LR is the base) to the scaled LR at
  // step W.
  if (step < warmup_steps_) {
    const double frac = static_cast<double>(step) / static_cast<double>(warmup_steps_);
    const double start =
        config_.warmup_start_fraction ? scaled_ * *config_.warmup_start_fraction : config_.base;
    return start + (scaled_ - start) * frac;
  }
  const std::string& s = config_.schedule;
  if (s == "constant") return scaled_;
  if (s == "step") {
    // Milestones are absolute step numbers; each one passed multiplies the LR by gamma.
    const auto passed =
        std::upper_bound(config_.milestones.begin(), config_.milestones.end(), step) -
        config_.milestones.begin();
    return scaled_ * std::pow(config_.gamma, static_cast<double>(passed));
  }
  // cosine / poly: decay over the steps after warmup, from scaled to scaled * final_lr_fraction.
  const double span = static_cast<double>(total_steps_ - warmup_steps_);
  const double t = std::min(static_cast<double>(step - warmup_steps_), span) / span;  // in [0, 1]
  const double end = scaled_ * config_.final_lr_fraction;
  if (s == "cosine") return end + (scaled_ - end) * 0.5 * (1.0 + std::cos(kPi * t));  // SGDR
  return end + (scaled_ - end) * std::pow(1.0 - t, config_.power);                    // poly
}

}  // namespace batchlab::run_values
