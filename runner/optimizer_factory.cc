// MakeOptimizer / SetLearningRate (see optimizer_factory.h).
#include "runner/optimizer_factory.h"

#include <string>
#include <tuple>
#include <vector>

#include "runner/lamb.h"
#include "runner/lars.h"
#include "runner/runner_error.h"

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
    return std::make_unique<torch::optim::SGD>(p, o);
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
    return std::make_unique<torch::optim::AdamW>(p, o);
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
