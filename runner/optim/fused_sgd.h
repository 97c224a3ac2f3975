// SGD, momentum and Nesterov momentum (torch::optim::SGD's update rule and state) with the update
// of each parameter fused into one pass over its memory. LibTorch's SGD::step runs three to five
// tensor operations per parameter (L2 term, momentum buffer, Nesterov term, update), each its own
// dispatch and its own pass; on a small model the dispatches cost more than the arithmetic
// (bench/runner: about 50 us of a 540 us MLP step). Per element, with gradient g, weight w,
// buffer b, LR γ, momentum m, dampening τ, weight decay λ:
//
//   d = g + λ·w;  b = d (first step) or m·b + (1 − τ)·d;  d = b (or d + m·b, Nesterov);  w -= γ·d
//
// A parameter whose weight, gradient and buffer are not float32 tensors laid out densely in the
// same order (contiguous, or channels-last alike) takes the same rule as tensor operations. The state is
// torch::optim::SGDParamState, so everything that reads SGD's state reads this one's.
//
//   FusedSgd opt(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
//   loss.backward(); opt.step();
#ifndef BATCHLAB_RUNNER_OPTIM_FUSED_SGD_H_
#define BATCHLAB_RUNNER_OPTIM_FUSED_SGD_H_

#include <vector>

#include <torch/optim/sgd.h>
#include <torch/types.h>

namespace batchlab::runner {

class FusedSgd : public torch::optim::SGD {
 public:
  FusedSgd(std::vector<torch::Tensor> params, const torch::optim::SGDOptions& defaults)
      : torch::optim::SGD(std::move(params), defaults) {}
  torch::Tensor step(LossClosure closure = nullptr) override;
};

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_OPTIM_FUSED_SGD_H_
