// The loss closure of an optimizer's step(), evaluated as LibTorch's optimizers do: with
// gradients enabled inside the step's NoGradGuard; an undefined tensor without a closure.
//
//   torch::Tensor Lars::step(LossClosure closure) {
//     torch::NoGradGuard no_grad;
//     torch::Tensor loss = EvaluateClosure(closure);
//     ...
#ifndef BATCHLAB_RUNNER_OPTIM_OPTIMIZER_CLOSURE_H_
#define BATCHLAB_RUNNER_OPTIM_OPTIMIZER_CLOSURE_H_

#include <torch/torch.h>

namespace batchlab::runner {

inline torch::Tensor EvaluateClosure(const torch::optim::Optimizer::LossClosure& closure) {
  if (closure == nullptr) return {};
  at::AutoGradMode enable_grad(true);
  return closure();
}

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_OPTIM_OPTIMIZER_CLOSURE_H_
