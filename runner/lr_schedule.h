// The learning rate at every step: a base LR at a base batch size, scaled to the run's global
// batch by a rule, warmed up linearly from the base LR, then decayed.
//
//   LrConfig c{.base = 0.1, .base_batch_size = 256, .rule = "linear", .warmup_steps = 100};
//   LrSchedule lr(c, /*global_batch=*/4096, /*total_steps=*/1000);
//   double now = lr.At(step);   // step counts from 0
//
// Rules: none (lr = base), linear (base * B / B0; Goyal et al. 2017), sqrt (base * sqrt(B / B0);
// Krizhevsky 2014, Hoffer et al. 2017). Schedules: constant, step, cosine, poly.
#ifndef BATCHLAB_RUNNER_LR_SCHEDULE_H_
#define BATCHLAB_RUNNER_LR_SCHEDULE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace batchlab::runner {

struct LrConfig {
  double base = 0.1;
  int64_t base_batch_size = 256;
  std::string rule = "none";         // none | linear | sqrt
  int64_t warmup_steps = 0;          // linear warmup from `base` to the scaled LR
  double warmup_epochs = 0;          // alternative to warmup_steps (converted with steps/epoch)
  std::string schedule = "constant"; // constant | step | cosine | poly
  std::vector<int64_t> milestones;   // step: decay by `gamma` at each milestone step
  double gamma = 0.1;
  double power = 1.0;                // poly
  double final_lr_fraction = 0.0;    // cosine/poly end at scaled * fraction
};

class LrSchedule {
 public:
  // Throws BadConfig naming "lr.rule" / "lr.schedule" for unknown names.
  LrSchedule(const LrConfig& config, int64_t global_batch, int64_t total_steps,
             int64_t steps_per_epoch = 0);
  double Scaled() const { return scaled_; }  // the peak LR after the rule
  double At(int64_t step) const;

 private:
  LrConfig config_;
  double scaled_ = 0;
  int64_t total_steps_ = 0;
  int64_t warmup_steps_ = 0;
};

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_LR_SCHEDULE_H_
