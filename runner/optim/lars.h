// LARS: layer-wise adaptive rate scaling (You, Gitman, Ginsburg 2017, "Large Batch Training of
// Convolutional Networks", Algorithm 1) as a LibTorch optimizer. For every parameter tensor w
// with gradient g, global LR γ, momentum m, weight decay β and trust coefficient η:
//
//   λ = η · |w| / (|g| + β·|w| + eps)        (local LR, the "trust ratio"; 1 if |w| or |g| is 0)
//   v ← m·v + γ·λ·(g + β·w)
//   w ← w − v
//
// With exclude_bias_and_norm (the default), 1-d tensors (biases, normalization scales) get neither
// decay nor trust ratio: v ← m·v + γ·g.
//
//   Lars opt(model->parameters(), LarsOptions(0.1).momentum(0.9).weight_decay(5e-4));
//   loss.backward(); opt.step();
#ifndef BATCHLAB_RUNNER_OPTIM_LARS_H_
#define BATCHLAB_RUNNER_OPTIM_LARS_H_

#include <vector>

#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include "base/config_fields.h"

namespace batchlab::runner {

struct LarsOptions : public torch::optim::OptimizerCloneableOptions<LarsOptions> {
  explicit LarsOptions(double lr = 0.1) : lr_(lr) {}
  TORCH_ARG(double, lr);
  // Defaults: the run config's (base/config_fields.cc).
  TORCH_ARG(double, momentum) = config::Default<double>("optimizer.momentum");
  TORCH_ARG(double, weight_decay) = config::Default<double>("optimizer.weight_decay");
  TORCH_ARG(double, trust_coefficient) = config::Default<double>("optimizer.trust_coefficient");
  TORCH_ARG(double, eps) = 0.0;  // added to the trust-ratio denominator
  TORCH_ARG(bool, exclude_bias_and_norm) = config::Default<bool>("optimizer.exclude_bias_and_norm");

 public:
  double get_lr() const override { return lr_; }
  void set_lr(const double lr) override { lr_ = lr; }
};

struct LarsParamState : public torch::optim::OptimizerCloneableParamState<LarsParamState> {
  TORCH_ARG(torch::Tensor, momentum_buffer);
  TORCH_ARG(double, trust_ratio) = 1.0;  // λ of the last step (for inspection and tests)
};

class Lars : public torch::optim::Optimizer {
 public:
  // The options are not checked here: a run's are checked once, against the declaration
  // (base/config_fields.cc), when its config is parsed (run_config.h).
  Lars(std::vector<torch::Tensor> params, const LarsOptions& defaults);
  torch::Tensor step(LossClosure closure = nullptr) override;
  // The state of one parameter, or nullptr before its first step.
  const LarsParamState* StateOf(const torch::Tensor& param) const;
};

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_OPTIM_LARS_H_
