// The learning rate at every step: a base LR at a base batch size, scaled to the run's global
// batch by a rule, warmed up linearly from the base LR (or from lr.warmup_start_fraction of the
// scaled LR), then decayed. No LibTorch: the runner trains by it, and the Python client's copy
// (clients/python/batchlab/lr.py) is kept equal to it bit for bit by
// tests/clients/lr_parity_test.py.
//
//   LrConfig c{.base = 0.1, .base_batch_size = 256, .rule = "linear", .warmup_steps = 100};
//   StatusOr<LrSchedule> lr = LrSchedule::Make(c, /*global_batch=*/4096, /*total_steps=*/1000);
//   if (!lr.ok()) ...;           // kInvalidArgument, the message naming the field ("lr.rule: ...")
//   double now = lr->At(step);   // step counts from 0
//
// Rules: none (lr = base), linear (base * B / B0; Goyal et al. 2017), sqrt (base * sqrt(B / B0);
// Krizhevsky 2014, Hoffer et al. 2017). Schedules: constant, step, cosine, poly.
#ifndef BATCHLAB_BASE_LR_SCHEDULE_H_
#define BATCHLAB_BASE_LR_SCHEDULE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/config_fields.h"
#include "base/status.h"

namespace batchlab::run_values {

// Config "lr" (meanings, ranges and defaults: base/config_fields.cc, the one declaration).
struct LrConfig {
  double base = config::Default<double>("lr.base");
  int64_t base_batch_size = config::Default<int64_t>("lr.base_batch_size");
  std::string rule = config::Default<std::string>("lr.rule");  // none | linear | sqrt
  int64_t warmup_steps = config::Default<int64_t>("lr.warmup_steps");
  double warmup_epochs = config::Default<double>("lr.warmup_epochs");  // converted with steps/epoch
  // The warmup's first LR as a fraction of the scaled LR; nullopt (absent, no default): lr.base.
  std::optional<double> warmup_start_fraction;
  std::string schedule = config::Default<std::string>("lr.schedule");
  std::vector<int64_t> milestones = config::Default<std::vector<int64_t>>("lr.milestones");
  double gamma = config::Default<double>("lr.gamma");
  double power = config::Default<double>("lr.power");                          // poly
  double final_lr_fraction = config::Default<double>("lr.final_lr_fraction");  // cosine, poly
};

class LrSchedule {
 public:
  // Checks the config against the run (unknown rule or schedule, a decay without a step budget,
  // a warmup past the end, ...): kInvalidArgument naming the field, in the words of the Python
  // client's lr.py. `steps_per_epoch` converts lr.warmup_epochs (0: unknown).
  static StatusOr<LrSchedule> Make(const LrConfig& config, int64_t global_batch,
                                   int64_t total_steps, int64_t steps_per_epoch = 0);
  double Scaled() const { return scaled_; }  // the peak LR after the rule
  double At(int64_t step) const;

 private:
  LrSchedule(const LrConfig& config, int64_t total_steps)
      : config_(config), total_steps_(total_steps) {}

  LrConfig config_;
  double scaled_ = 0;
  int64_t total_steps_ = 0;
  int64_t warmup_steps_ = 0;
};

}  // namespace batchlab::run_values

#endif  // BATCHLAB_BASE_LR_SCHEDULE_H_
