// One-step-stale gradient averaging (see lagged_gradient.h).
#include "runner/sync/lagged_gradient.h"

#include "base/elapsed.h"

namespace batchlab::runner {

LaggedGradient::LaggedGradient(int64_t numel, Communicator* comm,
                               std::chrono::milliseconds timeout, torch::TensorOptions options)
    : comm_(comm), timeout_(timeout) {
  buffers_[0] = torch::zeros({numel}, options);
  buffers_[1] = torch::zeros({numel}, options);
}

torch::Tensor LaggedGradient::WaitInFlight(double* wait_seconds) {
  *wait_seconds = 0;
  if (!pending_) return torch::Tensor();
  const auto start = std::chrono::steady_clock::now();
  if (in_flight_) in_flight_->Wait(timeout_);
  *wait_seconds = SecondsSince(start);
  in_flight_.reset();
  pending_ = false;
  return buffers_[1 - next_];
}

torch::Tensor LaggedGradient::Exchange(const torch::Tensor& grads, double* wait_seconds) {
  torch::Tensor previous = WaitInFlight(wait_seconds);
  torch::Tensor& send = buffers_[next_];
  send.copy_(grads.reshape({-1}));
  if (comm_ != nullptr) in_flight_ = comm_->Allreduce(send, ReduceOp::kAvg);
  pending_ = true;
  next_ = 1 - next_;
  return previous;
}

torch::Tensor LaggedGradient::Drain(double* wait_seconds) { return WaitInFlight(wait_seconds); }

torch::Tensor LaggedGradient::Settle() {
  if (!pending_) return torch::Tensor();
  if (in_flight_) in_flight_->Wait(timeout_);
  in_flight_.reset();  // still pending_: the next Exchange returns it
  return buffers_[1 - next_];
}

void LaggedGradient::Restore(const torch::Tensor& averaged) {
  buffers_[1 - next_].copy_(averaged.reshape({-1}));
  in_flight_.reset();
  pending_ = true;
}

}  // namespace batchlab::runner
