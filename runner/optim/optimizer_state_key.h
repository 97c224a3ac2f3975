// The key of a parameter's entry in a torch::optim::Optimizer's state() map: a string of the
// TensorImpl's address in LibTorch 1.x (Debian's 1.13), the address itself from LibTorch 2.0 on
// (PyTorch's own builds, e.g. on a GPU node: docs/runner-comm.md, "A runner-only build").
//
//   auto it = optimizer.state().find(OptimizerStateKey(p));
#ifndef BATCHLAB_RUNNER_OPTIM_OPTIMIZER_STATE_KEY_H_
#define BATCHLAB_RUNNER_OPTIM_OPTIMIZER_STATE_KEY_H_

#include <string>

#include <torch/torch.h>
#include <torch/version.h>

namespace batchlab::runner {

#if TORCH_VERSION_MAJOR >= 2
inline void* OptimizerStateKey(const torch::Tensor& p) { return p.unsafeGetTensorImpl(); }
#else
inline std::string OptimizerStateKey(const torch::Tensor& p) {
  return c10::guts::to_string(p.unsafeGetTensorImpl());
}
#endif

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_OPTIM_OPTIMIZER_STATE_KEY_H_
