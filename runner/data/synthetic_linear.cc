// Synthetic linear regression with Gaussian noise (see synthetic_linear.h for the formulas).
#include "runner/data/synthetic_linear.h"

#include <ATen/CPUGeneratorImpl.h>

#include "runner/data/dataset_registry.h"

namespace batchlab::runner {

Dataset MakeSyntheticLinear(const DataConfig& config) {
  const int64_t d = config.features > 0 ? config.features : 16;
  const int64_t n = config.samples > 0 ? config.samples : 16384;
  const int64_t n_test = config.test_samples > 0 ? config.test_samples : 4096;
  at::Generator gen = at::detail::createCPUGenerator(static_cast<uint64_t>(config.seed));

  torch::Tensor w_star = torch::randn({d}, gen, torch::kFloat64);
  w_star /= w_star.norm();  // |w*| = 1
  auto make = [&](int64_t rows, torch::Tensor& x, torch::Tensor& y) {
    torch::Tensor x64 = torch::randn({rows, d}, gen, torch::kFloat64);
    torch::Tensor e = torch::randn({rows}, gen, torch::kFloat64);
    torch::Tensor y64 = x64.matmul(w_star) + config.noise * e;
    x = x64.to(torch::kFloat32).contiguous();
    y = y64.to(torch::kFloat32).unsqueeze(1).contiguous();  // [rows, 1]
  };
  Dataset data;
  data.name = "synthetic-linear";
  make(n, data.train_x, data.train_y);
  make(n_test, data.test_x, data.test_y);
  data.classes = 0;
  data.truth = LinearTruth{w_star, config.noise};
  return data;
}

NoiseScaleTruth TrueNoiseScale(const LinearTruth& truth, const torch::Tensor& w,
                               const std::optional<torch::Tensor>& b) {
  const torch::Tensor delta = w.detach().to(torch::kFloat64).reshape({-1}) - truth.w_star;
  const double d = static_cast<double>(delta.numel());
  const double delta_sq = delta.square().sum().item<double>();
  const double bias = b ? b->detach().to(torch::kFloat64).reshape({-1})[0].item<double>() : 0.0;
  const double sigma_sq = truth.noise * truth.noise;
  NoiseScaleTruth t;
  t.grad_sq = delta_sq + bias * bias;
  t.trace_sigma = d * (delta_sq + bias * bias + sigma_sq) + delta_sq;
  if (b) t.trace_sigma += delta_sq + sigma_sq;
  t.b_simple = t.grad_sq > 0 ? t.trace_sigma / t.grad_sq : 0.0;
  return t;
}

namespace {

[[maybe_unused]] const bool registered_synthetic_linear = RegisterDataset(
    {"synthetic-linear",
     "y = w*.x + noise: regression with a known gradient noise scale (data.features, data.noise, "
     "data.samples, data.test_samples, data.seed)",
     MakeSyntheticLinear});

}  // namespace

}  // namespace batchlab::runner
