// LAMB: layer-wise adaptive moments for batch training (You et al. 2019, "Large Batch Optimization
// for Deep Learning: Training BERT in 76 minutes", Algorithm 2) as a LibTorch optimizer. For every
// parameter tensor w with gradient g at step t (from 1), LR γ, weight decay λ:
//
//   m ← β1·m + (1−β1)·g           v ← β2·v + (1−β2)·g²
//   m̂ = m / (1−β1^t)              v̂ = v / (1−β2^t)
//   r = m̂ / (sqrt(v̂) + eps) + λ·w
//   w ← w − γ · (|w| / |r|) · r     (trust ratio |w|/|r|; 1 if |w| or |r| is 0)
//
// With exclude_bias_and_norm (the default), 1-d tensors get no decay and trust ratio 1 (an Adam
// step).
//
//   Lamb opt(model->parameters(), LambOptions(1e-3).weight_decay(0.01));
//   loss.backward(); opt.step();
#ifndef BATCHLAB_RUNNER_OPTIM_LAMB_H_
#define BATCHLAB_RUNNER_OPTIM_LAMB_H_

#include <cstdint>
#include <vector>

#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include "base/config_fields.h"

namespace batchlab::runner {

struct LambOptions : public torch::optim::OptimizerCloneableOptions<LambOptions> {
  explicit LambOptions(double lr = 1e-3) : lr_(lr) {}
  TORCH_ARG(double, lr);
  // Defaults: the run config's (base/config_fields.cc).
  TORCH_ARG(double, beta1) = config::Default<double>("optimizer.beta1");
  TORCH_ARG(double, beta2) = config::Default<double>("optimizer.beta2");
  TORCH_ARG(double, eps) = config::Default<double>("optimizer.eps");
  TORCH_ARG(double, weight_decay) = config::Default<double>("optimizer.weight_decay");
  TORCH_ARG(bool, exclude_bias_and_norm) = config::Default<bool>("optimizer.exclude_bias_and_norm");

 public:
  double get_lr() const override { return lr_; }
  void set_lr(const double lr) override { lr_ = lr; }
};

struct LambParamState : public torch::optim::OptimizerCloneableParamState<LambParamState> {
  TORCH_ARG(int64_t, step) = 0;
  TORCH_ARG(torch::Tensor, exp_avg);
  TORCH_ARG(torch::Tensor, exp_avg_sq);
  TORCH_ARG(double, trust_ratio) = 1.0;  // |w|/|r| of the last step (for inspection and tests)
};

class Lamb : public torch::optim::Optimizer {
 public:
  // The options are not checked here: a run's are checked once, against the declaration
  // (base/config_fields.cc), when its config is parsed (run_config.h).
  Lamb(std::vector<torch::Tensor> params, const LambOptions& defaults);
  torch::Tensor step(LossClosure closure = nullptr) override;
  const LambParamState* StateOf(const torch::Tensor& param) const;
};

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_OPTIM_LAMB_H_
