// Precision parsing, autocast guard and dynamic loss scaling (see precision.h).
#include "runner/config/precision.h"

#include <ATen/autocast_mode.h>
#include <torch/torch.h>
#include <torch/version.h>

#include "runner/config/runner_error.h"

namespace batchlab::runner {

Precision ParsePrecision(const std::string& name) {
  if (name == "fp32") return Precision::kFp32;
  if (name == "bf16") return Precision::kBf16;
  if (name == "fp16") return Precision::kFp16;  // a CUDA device only: the Trainer checks
  throw BadConfig("precision: unknown precision \"" + name + "\"; use one of fp32, bf16, fp16");
}

const char* PrecisionName(Precision precision) {
  switch (precision) {
    case Precision::kFp32:
      return "fp32";
    case Precision::kBf16:
      return "bf16";
    case Precision::kFp16:
      return "fp16";
  }
  return "?";
}

namespace {

// LibTorch 2.4 replaced the per-backend autocast calls by ones that take the device type.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
bool AutocastEnabled(bool cuda) { return at::autocast::is_autocast_enabled(cuda ? at::kCUDA : at::kCPU); }
void SetAutocastEnabled(bool cuda, bool on) {
  at::autocast::set_autocast_enabled(cuda ? at::kCUDA : at::kCPU, on);
}
at::ScalarType AutocastDtype(bool cuda) {
  return at::autocast::get_autocast_dtype(cuda ? at::kCUDA : at::kCPU);
}
void SetAutocastDtype(bool cuda, at::ScalarType dtype) {
  at::autocast::set_autocast_dtype(cuda ? at::kCUDA : at::kCPU, dtype);
}
#else
bool AutocastEnabled(bool cuda) {
  return cuda ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
}
void SetAutocastEnabled(bool cuda, bool on) {
  if (cuda) {
    at::autocast::set_enabled(on);
  } else {
    at::autocast::set_cpu_enabled(on);
  }
}
at::ScalarType AutocastDtype(bool cuda) {
  return cuda ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
}
void SetAutocastDtype(bool cuda, at::ScalarType dtype) {
  if (cuda) {
    at::autocast::set_autocast_gpu_dtype(dtype);
  } else {
    at::autocast::set_autocast_cpu_dtype(dtype);
  }
}
#endif

}  // namespace

AutocastGuard::AutocastGuard(Precision precision, bool cuda) : precision_(precision), cuda_(cuda) {
  if (precision_ == Precision::kFp32) return;
  previous_enabled_ = AutocastEnabled(cuda_);
  previous_dtype_ = AutocastDtype(cuda_);
  SetAutocastEnabled(cuda_, true);
  SetAutocastDtype(cuda_, precision_ == Precision::kBf16 ? at::kBFloat16 : at::kHalf);
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (precision_ == Precision::kFp32) return;
  // As torch.autocast's __exit__: the cast cache lives until the outermost region ends.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  SetAutocastEnabled(cuda_, previous_enabled_);
  SetAutocastDtype(cuda_, previous_dtype_);
}

DynamicLossScaler::DynamicLossScaler(const LossScalerOptions& options)
    : options_(options), scale_(options.initial_scale) {
  if (!(options_.initial_scale > 0) || !(options_.growth_factor >= 1) ||
      !(options_.backoff_factor > 0 && options_.backoff_factor < 1) ||
      options_.growth_interval < 1) {
    throw RunnerError(RunnerError::Kind::kInternal, "loss scaler: invalid options");
  }
}

torch::Tensor DynamicLossScaler::Scale(const torch::Tensor& loss) const { return loss * scale_; }

bool DynamicLossScaler::UnscaleAndCheck(const std::vector<torch::Tensor>& grads) {
  torch::NoGradGuard no_grad;
  // One host read for all of them: the count of non-finite entries, summed on the device.
  torch::Tensor bad;
  for (const torch::Tensor& g : grads) {
    if (!g.defined()) continue;
    torch::Tensor grad = g;  // shares storage: in-place ops act on the gradient itself
    grad.mul_(1.0 / scale_);
    torch::Tensor count = torch::logical_not(torch::isfinite(grad)).sum();
    bad = bad.defined() ? bad.add_(count) : count;
  }
  last_finite_ = !bad.defined() || bad.item<int64_t>() == 0;
  return last_finite_;
}

void DynamicLossScaler::Update() {
  if (!last_finite_) {
    scale_ *= options_.backoff_factor;
    good_steps_ = 0;
    ++skipped_;
  } else if (++good_steps_ >= options_.growth_interval) {
    scale_ *= options_.growth_factor;
    good_steps_ = 0;
  }
  last_finite_ = true;
}

}  // namespace batchlab::runner
