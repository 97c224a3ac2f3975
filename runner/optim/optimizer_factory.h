// Builds the optimizer a run's config names, over the model's parameters.
//
//   OptimizerConfig oc = ...;   // from config "optimizer"
//   std::unique_ptr<torch::optim::Optimizer> opt = MakeOptimizer(oc, model->named_parameters(),
//   lr0); SetLearningRate(*opt, lr);  // every step, from the LR schedule
//
// Names: sgd, momentum, nesterov, adam, adamw, lars, lamb (LARS and LAMB are optimizers of our
// own, lars.h / lamb.h). The values are checked once, against the declaration, when the config is
// parsed (run_config.h); an unknown name here throws BadConfig naming "optimizer.name".
#ifndef BATCHLAB_RUNNER_OPTIM_OPTIMIZER_FACTORY_H_
#define BATCHLAB_RUNNER_OPTIM_OPTIMIZER_FACTORY_H_

#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "base/config_fields.h"

namespace batchlab::runner {

// Config "optimizer" (meanings, ranges and defaults: base/config_fields.cc, the one declaration;
// ParseRunConfig checks the ranges).
struct OptimizerConfig {
  std::string name = config::Default<std::string>("optimizer.name");
  double momentum = config::Default<double>("optimizer.momentum");
  double weight_decay = config::Default<double>("optimizer.weight_decay");
  double beta1 = config::Default<double>("optimizer.beta1");
  double beta2 = config::Default<double>("optimizer.beta2");
  double eps = config::Default<double>("optimizer.eps");
  double trust_coefficient = config::Default<double>("optimizer.trust_coefficient");
  bool exclude_bias_and_norm = config::Default<bool>("optimizer.exclude_bias_and_norm");
};

std::unique_ptr<torch::optim::Optimizer> MakeOptimizer(
    const OptimizerConfig& config, const torch::OrderedDict<std::string, torch::Tensor>& params,
    double initial_lr);

void SetLearningRate(torch::optim::Optimizer& optimizer, double lr);

// The optimizer's per-parameter state tensors (momentum buffers, Adam/LAMB moments), in parameter
// order; empty before the first step. local_sgd averages them with the parameters.
std::vector<torch::Tensor> OptimizerStateTensors(torch::optim::Optimizer& optimizer,
                                                 const std::vector<torch::Tensor>& params);

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_OPTIM_OPTIMIZER_FACTORY_H_
