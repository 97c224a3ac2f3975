// MakeOptimizer / SetLearningRate (see optimizer_factory.h).
#include "runner/optimizer_factory.h"

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "runner/lamb.h"
#include "runner/lars.h"
#include "runner/runner_error.h"

namespace batchlab::runner {
namespace {

void Need(bool ok, const std::string& message) {
  if (!ok) throw BadConfig(message);
}

void Validate(const OptimizerConfig& c, double initial_lr) {
  Need(std::isfinite(initial_lr) && initial_lr >= 0, "lr.base: must be a non-negative number");
  Need(std::isfinite(c.weight_decay) && c.weight_decay >= 0,
       "optimizer.weight_decay: must be a number >= 0");
  const bool uses_momentum = c.name == "momentum" || c.name == "nesterov" || c.name == "lars";
  if (uses_momentum) {
    Need(std::isfinite(c.momentum) && c.momentum >= 0 && c.momentum < 1,
         "optimizer.momentum: must be in [0, 1)");
  }
  if (c.name == "nesterov") {
    Need(c.momentum > 0, "optimizer.momentum: nesterov needs a momentum > 0 (e.g. 0.9)");
  }
  const bool uses_moments = c.name == "adam" || c.name == "adamw" || c.name == "lamb";
  if (uses_moments) {
    Need(c.beta1 >= 0 && c.beta1 < 1, "optimizer.beta1: must be in [0, 1)");
    Need(c.beta2 >= 0 && c.beta2 < 1, "optimizer.beta2: must be in [0, 1)");
    Need(c.eps > 0, "optimizer.eps: must be > 0");
  }
  if (c.name == "lars") {
    Need(c.trust_coefficient > 0, "optimizer.trust_coefficient: must be > 0 (e.g. 0.001)");
  }
}

}  // namespace

std::unique_ptr<torch::optim::Optimizer> MakeOptimizer(
    const OptimizerConfig& config, const torch::OrderedDict<std::string, torch::Tensor>& params,
    double initial_lr) {
  Validate(config, initial_lr);
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
