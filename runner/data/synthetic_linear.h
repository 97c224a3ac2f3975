// A regression task whose gradient noise scale is known in closed form, for testing the
// gradient-noise measurement and the analysis estimators against the truth.
//
//   x ~ N(0, I_d),  y = w* . x + sigma * e,  e ~ N(0, 1),  |w*| = 1,
//   per-sample loss l = 0.5 * (w . x + b - y)^2   (model: logreg with one output).
//
// With delta = w - w* and the bias b (its true value is 0), the population gradient and its
// per-sample covariance Sigma are (Gaussian fourth moments, E[(delta.x)^2 x x^T] = |delta|^2 I +
// 2 delta delta^T):
//
//   G = (delta, b),   |G|^2 = |delta|^2 + b^2
//   tr(Sigma) = d (|delta|^2 + b^2 + sigma^2) + |delta|^2      (weights)
//             + |delta|^2 + sigma^2                            (bias, if the model has one)
//   B_simple = tr(Sigma) / |G|^2        (McCandlish et al. 2018)
//
// At w = 0 without a bias: B_simple = d + 1 + d sigma^2. (docs/runner.md has the derivation.)
//
//   Dataset data = MakeSyntheticLinear(config.data);
//   NoiseScaleTruth t = TrueNoiseScale(*data.truth, w, b);   // t.b_simple
#ifndef BATCHLAB_RUNNER_DATA_SYNTHETIC_LINEAR_H_
#define BATCHLAB_RUNNER_DATA_SYNTHETIC_LINEAR_H_

#include <optional>

#include <torch/torch.h>

#include "runner/data/dataset.h"

namespace batchlab::runner {

// samples (default 16384) + test_samples (default 4096) rows of dimension features (default 16),
// generated from data.seed (not the run seed: every run of a sweep sees the same data).
Dataset MakeSyntheticLinear(const DataConfig& config);

struct NoiseScaleTruth {
  double grad_sq = 0;      // |G|^2
  double trace_sigma = 0;  // tr(Sigma), per sample
  double b_simple = 0;     // tr(Sigma) / |G|^2
};

// The population values at weights `w` ([d] or [1, d]) and optional bias `b` ([1]).
NoiseScaleTruth TrueNoiseScale(const LinearTruth& truth, const torch::Tensor& w,
                               const std::optional<torch::Tensor>& b);

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_DATA_SYNTHETIC_LINEAR_H_
