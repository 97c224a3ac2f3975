// MakeOptimizer / SetLearningRate (see optimizer_factory.h).
#include "runner/optim/optimizer_factory.h"

#include <string>
#include <tuple>
#include <vector>

#include "runner/optim/foreach_adamw.h"
#include "runner/optim/fused_sgd.h"
#include "runner/optim/lamb.h"
#include "runner/optim/lars.h"
#include "runner/optim/optimizer_state_key.h"
#include "runner/config/runner_error.h"

namespace batchlab::runner {
std::unique_ptr<torch::optim::Optimizer> MakeOptimizer(
    const OptimizerConfig& config, const torch::OrderedDict<std::string, torch::Tensor>& params,
    double initial_lr) {
  std::vector<torch::Tensor> p = params.values();
  const std::string& n = config.name;
  if (n == "sgd" || n == "momentum" || n == "nesterov") {
    torch::optim::SGDOptions o(initial_lr);
    o.weight_decay(config.weight_decay);  // L2 added to the gradient
    if (n != "sgd") o.momentum(config.momentum);
    if (n == "nesterov") o.nesterov(true);
    return std::make_unique<FusedSgd>(p, o);  // torch::optim::SGD's rule, one pass per tensor
  }
  if (n == "adam") {
    torch::optim::AdamOptions o(initial_lr);
    o.betas(std::make_tuple(config.beta1, config.beta2)).eps(config.eps);
    o.weight_decay(config.weight_decay);  // L2 added to the gradient
    return std::make_unique<torch::optim::Adam>(p, o);
  }
  if (n == "adamw") {
    torch::optim::AdamWOptions o(initial_lr);
    o.betas(std::make_tuple(config.beta1, config.beta2)).eps(config.eps);
    o.weight_decay(config.weight_decay);  // decoupled (Loshchilov & Hutter 2019)
    return std::make_unique<ForeachAdamW>(p, o);  // multi-tensor kernels on a CUDA device
  }
  if (n == "lars") {
    LarsOptions o(initial_lr);
    o.momentum(config.momentum).weight_decay(config.weight_decay);
    o.trust_coefficient(config.trust_coefficient);
    o.exclude_bias_and_norm(config.exclude_bias_and_norm);
    return std::make_unique<Lars>(p, o);
  }
  if (n == "lamb") {
    LambOptions o(initial_lr);
    o.beta1(config.beta1).beta2(config.beta2).eps(config.eps).weight_decay(config.weight_decay);
    o.exclude_bias_and_norm(config.exclude_bias_and_norm);
    return std::make_unique<Lamb>(p, o);
  }
  throw BadConfig("optimizer.name: unknown optimizer \"" + n +
                  "\"; use one of sgd, momentum, nesterov, adam, adamw, lars, lamb");
}

void SetLearningRate(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
}

}  // namespace batchlab::runner

namespace batchlab::runner {

std::vector<torch::Tensor> OptimizerStateTensors(torch::optim::Optimizer& optimizer,
                                                 const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> out;
  auto add = [&out](const torch::Tensor& t) {
    if (t.defined()) out.push_back(t);
  };
  auto& state = optimizer.state();
  for (const torch::Tensor& p : params) {
    auto it = state.find(OptimizerStateKey(p));
    if (it == state.end()) continue;
    torch::optim::OptimizerParamState* s = it->second.get();
    if (auto* sgd = dynamic_cast<torch::optim::SGDParamState*>(s)) {
      add(sgd->momentum_buffer());
    } else if (auto* adam = dynamic_cast<torch::optim::AdamParamState*>(s)) {
      add(adam->exp_avg());
      add(adam->exp_avg_sq());
      add(adam->max_exp_avg_sq());
    } else if (auto* adamw = dynamic_cast<torch::optim::AdamWParamState*>(s)) {
      add(adamw->exp_avg());
      add(adamw->exp_avg_sq());
      add(adamw->max_exp_avg_sq());
    } else if (auto* lars = dynamic_cast<LarsParamState*>(s)) {
      add(lars->momentum_buffer());
    } else if (auto* lamb = dynamic_cast<LambParamState*>(s)) {
      add(lamb->exp_avg());
      add(lamb->exp_avg_sq());
    }
  }
  return out;
}

}  // namespace batchlab::runner
