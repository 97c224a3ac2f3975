// LR rule, warmup and decay (see lr_schedule.h; formulas and citations in docs/runner-comm.md).
#include "runner/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "base/run_values.h"
#include "runner/runner_error.h"

namespace batchlab::runner {
namespace {

constexpr double kPi = 3.14159265358979323846;

// The peak LR: base scaled from base_batch_size to the run's global batch by the named rule.
double ScaleByRule(const LrConfig& c, int64_t global_batch) {
  if (auto lr = run_values::ScaledLr(c.base, global_batch, c.base_batch_size, c.rule)) return *lr;
  throw BadConfig("lr.rule: unknown rule \"" + c.rule + "\"; use one of none, linear, sqrt");
}

// Single values are checked against the declaration when a config is parsed (run_config.h); this
// module checks them again, with the messages the Python client's lr.py mirrors word for word
// (lr_parity_test), because it is also used on its own (tests/clients/lr_schedule_print.cc).
void Validate(const LrConfig& c, int64_t global_batch, int64_t total_steps,
              int64_t steps_per_epoch) {
  auto need = [](bool ok, const std::string& message) {
    if (!ok) throw BadConfig(message);
  };
  need(std::isfinite(c.base) && c.base > 0, "lr.base: must be a positive number");
  need(c.base_batch_size > 0, "lr.base_batch_size: must be a positive integer");
  need(global_batch > 0, "batch_size: must be a positive integer");
  need(c.warmup_steps >= 0, "lr.warmup_steps: must be >= 0");
  need(std::isfinite(c.warmup_epochs) && c.warmup_epochs >= 0, "lr.warmup_epochs: must be >= 0");
  need(!(c.warmup_steps > 0 && c.warmup_epochs > 0),
       "lr.warmup_epochs: set either lr.warmup_steps or lr.warmup_epochs, not both");
  need(c.warmup_epochs == 0 || steps_per_epoch > 0,
       "lr.warmup_epochs: the number of steps per epoch is unknown; use lr.warmup_steps");
  const std::string& s = c.schedule;
  need(s == "constant" || s == "step" || s == "cosine" || s == "poly",
       "lr.schedule: unknown schedule \"" + s + "\"; use one of constant, step, cosine, poly");
  if (s == "step") {
    need(std::isfinite(c.gamma) && c.gamma > 0, "lr.gamma: must be a positive number");
    need(!c.milestones.empty(), "lr.milestones: the step schedule needs at least one milestone");
    for (size_t i = 0; i < c.milestones.size(); ++i) {
      need(c.milestones[i] >= 0 && (i == 0 || c.milestones[i] > c.milestones[i - 1]),
           "lr.milestones: must be non-negative steps in increasing order");
    }
  }
  if (s == "cosine" || s == "poly") {
    need(total_steps > 0, "lr.schedule: \"" + s +
                              "\" decays to the end of training, so it needs a budget in steps, "
                              "epochs or samples (not only seconds)");
    need(std::isfinite(c.final_lr_fraction) && c.final_lr_fraction >= 0 && c.final_lr_fraction <= 1,
         "lr.final_lr_fraction: must be in [0, 1]");
  }
  if (s == "poly") need(std::isfinite(c.power) && c.power > 0, "lr.power: must be positive");
}

}  // namespace

LrSchedule::LrSchedule(const LrConfig& config, int64_t global_batch, int64_t total_steps,
                       int64_t steps_per_epoch)
    : config_(config), total_steps_(total_steps) {
  Validate(config, global_batch, total_steps, steps_per_epoch);
  scaled_ = ScaleByRule(config, global_batch);
  warmup_steps_ = config.warmup_steps;
  if (config.warmup_epochs > 0) {
    warmup_steps_ = static_cast<int64_t>(
        std::llround(config.warmup_epochs * static_cast<double>(steps_per_epoch)));
  }
  if (total_steps_ > 0 && warmup_steps_ >= total_steps_ &&
      (config.schedule == "cosine" || config.schedule == "poly")) {
    std::ostringstream msg;
    msg << "lr.warmup_steps: warmup (" << warmup_steps_ << " steps) must end before the last step ("
        << total_steps_ << ") for the \"" << config.schedule << "\" schedule";
    throw BadConfig(msg.str());
  }
}

double LrSchedule::At(int64_t step) const {
  step = std::max<int64_t>(step, 0);
  // Gradual warmup (Goyal et al. 2017): from the base LR at step 0 to the scaled LR at step W.
  if (step < warmup_steps_) {
    const double frac = static_cast<double>(step) / static_cast<double>(warmup_steps_);
    return config_.base + (scaled_ - config_.base) * frac;
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

}  // namespace batchlab::runner
