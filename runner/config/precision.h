// Numeric precision of the forward pass, as the config's `precision` names it.
//
//   fp32  plain float32 everywhere.
//   bf16  LibTorch autocast on the rank's device (the CPU's or CUDA's) to bfloat16:
//         matmul-heavy ops (linear, conv, matmul) run in bfloat16, precision-sensitive ones
//         (softmax, losses) in float32; parameters, gradients and optimizer state stay float32,
//         so allreduce and the optimizer are unchanged. bf16 has float32's exponent range, so it
//         needs no loss scaling.
//   fp16  a CUDA device only (the Trainer refuses it on the CPU): CUDA autocast to float16 plus
//         dynamic loss scaling (Micikevicius et al. 2017), as PyTorch's GradScaler does it.
//
//   Precision p = ParsePrecision(config.precision);      // BadConfig naming "precision"
//   { AutocastGuard autocast(p, device.is_cuda()); loss = loss_fn(model->forward(x), y); }
//   loss.backward();                                       // outside the guard, as in PyTorch
//
// DynamicLossScaler is the loss-scaling state machine (pure arithmetic, so it is built and
// tested everywhere even though only fp16 uses it):
//
//   scaler.Scale(loss).backward();
//   buckets.AllreduceGradients(...);                 // same gradients on every rank, so
//   if (scaler.UnscaleAndCheck(grads)) opt.step();   // every rank takes the same decision
//   scaler.Update();
#ifndef BATCHLAB_RUNNER_CONFIG_PRECISION_H_
#define BATCHLAB_RUNNER_CONFIG_PRECISION_H_

#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

namespace batchlab::runner {

enum class Precision { kFp32, kBf16, kFp16 };

// "fp32" | "bf16" | "fp16". Throws BadConfig naming "precision" otherwise.
Precision ParsePrecision(const std::string& name);
const char* PrecisionName(Precision precision);

// Enables autocast for `precision` for the guard's lifetime (nothing for fp32); restores the
// previous autocast state and clears the cast cache on destruction. Not copyable.
class AutocastGuard {
 public:
  AutocastGuard(Precision precision, bool cuda);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  Precision precision_;
  bool cuda_;
  bool previous_enabled_ = false;
  at::ScalarType previous_dtype_ = at::kFloat;
};

struct LossScalerOptions {
  double initial_scale = 65536.0;  // 2^16
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;  // finite steps in a row before the scale grows
};

// Dynamic loss scaling: multiply the loss by S before backward; divide the gradients by S before
// the step; if any gradient entry is Inf/NaN, skip the step and multiply S by backoff_factor;
// after growth_interval finite steps in a row, multiply S by growth_factor.
class DynamicLossScaler {
 public:
  explicit DynamicLossScaler(const LossScalerOptions& options = LossScalerOptions());
  torch::Tensor Scale(const torch::Tensor& loss) const;
  // Divides every defined gradient (in place) by the scale; returns true if all entries are
  // finite (take the optimizer step), false if the step must be skipped (one host read for all
  // of them). Remembers the answer for Update().
  bool UnscaleAndCheck(const std::vector<torch::Tensor>& grads);
  // For checkpoints: the whole state, and setting it back.
  int64_t good_steps() const { return good_steps_; }
  void Restore(double scale, int64_t good_steps, int64_t skipped) {
    scale_ = scale;
    good_steps_ = good_steps;
    skipped_ = skipped;
  }
  void Update();
  double scale() const { return scale_; }
  int64_t skipped_steps() const { return skipped_; }

 private:
  LossScalerOptions options_;
  double scale_;
  int64_t good_steps_ = 0;
  int64_t skipped_ = 0;
  bool last_finite_ = true;
};

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_CONFIG_PRECISION_H_
