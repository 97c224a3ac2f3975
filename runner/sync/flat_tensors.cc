// Packing tensors into one flat buffer (see flat_tensors.h).
#include "runner/sync/flat_tensors.h"

namespace batchlab::runner {

int64_t FlatSize(const std::vector<torch::Tensor>& tensors) {
  int64_t n = 0;
  for (const auto& t : tensors) n += t.numel();
  return n;
}

void PackInto(const std::vector<torch::Tensor>& tensors, torch::Tensor& flat) {
  torch::NoGradGuard no_grad;
  int64_t at = 0;
  for (const auto& t : tensors) {
    flat.narrow(0, at, t.numel()).copy_(t.detach().reshape({-1}));
    at += t.numel();
  }
}

void UnpackFrom(const torch::Tensor& flat, std::vector<torch::Tensor>& tensors) {
  torch::NoGradGuard no_grad;
  int64_t at = 0;
  for (auto& t : tensors) {
    t.copy_(flat.narrow(0, at, t.numel()).view(t.sizes()));
    at += t.numel();
  }
}

}  // namespace batchlab::runner
