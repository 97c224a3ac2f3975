// Builds the optimizer a run's config names, over the model's parameters.
//
//   OptimizerConfig oc = ...;   // from config "optimizer"
//   std::unique_ptr<torch::optim::Optimizer> opt = MakeOptimizer(oc, model->named_parameters(), lr0);
//   SetLearningRate(*opt, lr);  // every step, from the LR schedule
//
// Names: sgd, momentum, nesterov, adam, adamw, lars, lamb (LARS and LAMB are optimizers of our
// own, lars.h / lamb.h). Unknown names throw BadConfig naming "optimizer.name" and the choices.
#ifndef BATCHLAB_RUNNER_OPTIMIZER_FACTORY_H_
#define BATCHLAB_RUNNER_OPTIMIZER_FACTORY_H_

#include <memory>
#include <string>

#include <torch/torch.h>

namespace batchlab::runner {

struct OptimizerConfig {
  std::string name = "momentum";
  double momentum = 0.9;
  double weight_decay = 0.0;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // adam, adamw, lamb
  double trust_coefficient = 0.001;                // lars (eta)
  bool exclude_bias_and_norm = true;               // lars, lamb: no decay / trust ratio on 1-d params
};

std::unique_ptr<torch::optim::Optimizer> MakeOptimizer(
    const OptimizerConfig& config, const torch::OrderedDict<std::string, torch::Tensor>& params,
    double initial_lr);

void SetLearningRate(torch::optim::Optimizer& optimizer, double lr);

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_OPTIMIZER_FACTORY_H_
