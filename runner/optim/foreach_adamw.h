// AdamW for parameters on a CUDA device: torch::optim::AdamW's rule (decoupled weight decay,
// bias-corrected moments; Loshchilov & Hutter 2019) with each of its element-wise updates done
// for all parameters at once by LibTorch's multi-tensor (_foreach_) kernels, a few launches per
// step instead of a few per parameter, as PyTorch's AdamW does by default on CUDA. The state is
// torch::optim::AdamWParamState, so checkpoints and local SGD's averaging see the same tensors.
// On the CPU, with amsgrad, or when some parameter has no gradient, it is AdamW::step itself
// (so every CPU run is bit for bit what it was).
//
//   auto opt = std::make_unique<ForeachAdamW>(params, torch::optim::AdamWOptions(lr));
#ifndef BATCHLAB_RUNNER_OPTIM_FOREACH_ADAMW_H_
#define BATCHLAB_RUNNER_OPTIM_FOREACH_ADAMW_H_

#include <vector>

#include <torch/torch.h>

namespace batchlab::runner {

class ForeachAdamW : public torch::optim::AdamW {
 public:
  ForeachAdamW(const std::vector<torch::Tensor>& params, torch::optim::AdamWOptions options)
      : torch::optim::AdamW(params, std::move(options)) {}
  torch::Tensor step(LossClosure closure = nullptr) override;
};

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_OPTIM_FOREACH_ADAMW_H_
