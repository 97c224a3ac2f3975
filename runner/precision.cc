// Precision parsing, autocast guard and dynamic loss scaling (see precision.h).
#include "runner/precision.h"

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "runner/runner_error.h"

namespace batchlab::runner {

Precision ParsePrecision(const std::string& name) {
  if (name == "fp32") return Precision::kFp32;
  if (name == "bf16") return Precision::kBf16;
#ifdef BATCHLAB_WITH_NCCL
  if (name == "fp16") return Precision::kFp16;
  throw BadConfig("precision: unknown precision \"" + name + "\"; use one of fp32, bf16, fp16");
#else
  if (name == "fp16") {
    throw BadConfig(
        "precision: \"fp16\" needs a CUDA build (fp16 autocast with loss scaling); "
        "on CPU use \"bf16\" or \"fp32\"");
  }
  throw BadConfig("precision: unknown precision \"" + name + "\"; use one of fp32, bf16");
#endif
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

AutocastGuard::AutocastGuard(Precision precision) : precision_(precision) {
  switch (precision_) {
    case Precision::kFp32:
      return;
    case Precision::kBf16:
      previous_enabled_ = at::autocast::is_cpu_enabled();
      previous_dtype_ = at::autocast::get_autocast_cpu_dtype();
      at::autocast::set_cpu_enabled(true);
      at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
      break;
    case Precision::kFp16:  // CUDA autocast; only reachable on CUDA builds (ParsePrecision)
      previous_enabled_ = at::autocast::is_enabled();
      previous_dtype_ = at::autocast::get_autocast_gpu_dtype();
      at::autocast::set_enabled(true);
      at::autocast::set_autocast_gpu_dtype(at::kHalf);
      break;
  }
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (precision_ == Precision::kFp32) return;
  // As torch.autocast's __exit__: the cast cache lives until the outermost region ends.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  if (precision_ == Precision::kBf16) {
    at::autocast::set_cpu_enabled(previous_enabled_);
    at::autocast::set_autocast_cpu_dtype(previous_dtype_);
  } else {
    at::autocast::set_enabled(previous_enabled_);
    at::autocast::set_autocast_gpu_dtype(previous_dtype_);
  }
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

bool DynamicLossScaler::UnscaleAndCheck(const std::vector<torch::Tensor>& params) {
  torch::NoGradGuard no_grad;
  bool finite = true;
  for (const torch::Tensor& p : params) {
    const torch::Tensor& g = p.grad();
    if (!g.defined()) continue;
    torch::Tensor grad = g;  // shares storage: in-place ops act on the parameter's gradient
    grad.div_(scale_);
    if (finite && !torch::isfinite(grad).all().item<bool>()) finite = false;
  }
  last_finite_ = finite;
  return finite;
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
