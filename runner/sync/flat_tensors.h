// Many tensors as one contiguous float buffer, for a single message or collective (the
// synchronization modes' parameter and optimizer-state exchanges; gradient_buckets.h does the
// same for gradients, in place).
//
//   torch::Tensor flat = torch::empty({FlatSize(params) + 4});
//   PackInto(params, flat);            // params' values, in order, from flat[0]
//   comm->Allreduce(flat, ReduceOp::kAvg)->Wait(timeout);
//   UnpackFrom(flat, params);          // back in place (no autograd)
#ifndef BATCHLAB_RUNNER_SYNC_FLAT_TENSORS_H_
#define BATCHLAB_RUNNER_SYNC_FLAT_TENSORS_H_

#include <cstdint>
#include <vector>

#include <torch/torch.h>

namespace batchlab::runner {

int64_t FlatSize(const std::vector<torch::Tensor>& tensors);
// Copies the tensors' values into flat[0 .. FlatSize) in order (flat may be longer).
void PackInto(const std::vector<torch::Tensor>& tensors, torch::Tensor& flat);
// Copies flat[0 .. FlatSize) back into the tensors, in place.
void UnpackFrom(const torch::Tensor& flat, std::vector<torch::Tensor>& tensors);

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_SYNC_FLAT_TENSORS_H_
