// Averaging parameters and optimizer state across ranks (see parameter_average.h).
#include "runner/sync/parameter_average.h"

#include "base/elapsed.h"
#include "runner/sync/flat_tensors.h"

namespace batchlab::runner {

ParameterAverage::ParameterAverage(Communicator& comm, std::chrono::milliseconds timeout)
    : comm_(comm), timeout_(timeout) {}

double ParameterAverage::Run(std::vector<torch::Tensor> params, std::vector<torch::Tensor> state,
                             torch::Tensor& shared) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<torch::Tensor> all = std::move(params);
  all.insert(all.end(), state.begin(), state.end());
  all.push_back(shared);
  const int64_t n = FlatSize(all);
  // On the parameters' device (a CUDA rank's average is one device buffer).
  if (!buffer_.defined() || buffer_.numel() != n) buffer_ = torch::empty({n}, all.front().options());
  PackInto(all, buffer_);
  comm_.Allreduce(buffer_, ReduceOp::kAvg)->Wait(timeout_);
  UnpackFrom(buffer_, all);
  return SecondsSince(start);
}

}  // namespace batchlab::runner
