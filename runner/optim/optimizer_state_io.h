// The optimizer's per-parameter state in a checkpoint file (trainer_checkpoint.cc writes it): read
// back into an optimizer over the same parameters, by a resumed attempt or a branch run
// (branch_start.cc).
#ifndef BATCHLAB_RUNNER_OPTIM_OPTIMIZER_STATE_IO_H_
#define BATCHLAB_RUNNER_OPTIM_OPTIMIZER_STATE_IO_H_

#include <vector>

#include <torch/torch.h>

#include "runner/checkpoint/checkpoint_file.h"

namespace batchlab::runner {

// Replaces `optimizer`'s state with the file's (header state.optimizer and the optim.* tensors).
// Throws CheckpointRejected when the file's state does not fit `params`.
void RestoreOptimizerState(torch::optim::Optimizer& optimizer,
                           const std::vector<torch::Tensor>& params, const CheckpointFile& file);

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_OPTIM_OPTIMIZER_STATE_IO_H_
