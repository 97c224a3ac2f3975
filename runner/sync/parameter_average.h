// comm.sync "local_sgd" (local SGD, Stich 2019; Lin et al. 2020, "Don't use large mini-batches,
// use local SGD"): every rank steps alone, and every H steps the ranks average their parameters
// and their optimizer state (momentum buffers, Adam/LAMB moments), in one allreduce. A few floats
// of the step's shared values (loss, elapsed, stop) ride along, so every rank takes the same
// decisions at the same step.
//
//   ParameterAverage average(comm, timeout);
//   double seconds = average.Run(params, OptimizerStateTensors(*opt, params), shared);
#ifndef BATCHLAB_RUNNER_SYNC_PARAMETER_AVERAGE_H_
#define BATCHLAB_RUNNER_SYNC_PARAMETER_AVERAGE_H_

#include <chrono>
#include <vector>

#include <torch/torch.h>

#include "runner/comm/communicator.h"

namespace batchlab::runner {

class ParameterAverage {
 public:
  ParameterAverage(Communicator& comm, std::chrono::milliseconds timeout);
  // Averages `params`, `state` and `shared` (a small float tensor) over the ranks, in place.
  // Returns the seconds the exchange took.
  double Run(std::vector<torch::Tensor> params, std::vector<torch::Tensor> state,
             torch::Tensor& shared);

 private:
  Communicator& comm_;
  std::chrono::milliseconds timeout_;
  torch::Tensor buffer_;  // reused while the sizes stay the same
};

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_SYNC_PARAMETER_AVERAGE_H_
