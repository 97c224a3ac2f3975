// comm.sync "lag" (gradient lag-sync, Kurth et al. 2018): the average of step t's gradient is
// computed while step t+1 runs forward and backward, and step t+1's update applies it. Two
// buffers alternate: one in flight, one being applied. With no communicator (one rank) the
// "average" is the gradient itself, so the one-step delay can be tested without ranks.
//
//   LaggedGradient lag(param_count, comm, timeout);
//   torch::Tensor previous = lag.Exchange(grads, &waited);  // undefined on the first step
//   if (previous.defined()) { grads.copy_(previous); optimizer->step(); }
//   torch::Tensor last = lag.Drain(&waited);                 // at the end: the one in flight
#ifndef BATCHLAB_RUNNER_SYNC_LAGGED_GRADIENT_H_
#define BATCHLAB_RUNNER_SYNC_LAGGED_GRADIENT_H_

#include <chrono>
#include <cstdint>
#include <memory>

#include <torch/torch.h>

#include "runner/comm/communicator.h"

namespace batchlab::runner {

class LaggedGradient {
 public:
  // `options`: the gradients' device (and float32), where the two buffers live.
  LaggedGradient(int64_t numel, Communicator* comm, std::chrono::milliseconds timeout,
                 torch::TensorOptions options = torch::TensorOptions());
  // Starts averaging a copy of `grads`; returns the previous call's averaged gradient (waiting
  // for it; valid until the next call), or an undefined tensor on the first call.
  // `wait_seconds` gets the time spent blocked.
  torch::Tensor Exchange(const torch::Tensor& grads, double* wait_seconds);
  // The averaged gradient still in flight (waiting for it), or undefined when there is none.
  torch::Tensor Drain(double* wait_seconds);
  // For a checkpoint: the averaged gradient in flight (waiting for it) without consuming it, so
  // the next Exchange still returns it; undefined when there is none.
  torch::Tensor Settle();
  // A resumed run: `averaged` is in flight again, as Settle() returned it.
  void Restore(const torch::Tensor& averaged);

 private:
  torch::Tensor WaitInFlight(double* wait_seconds);

  Communicator* comm_;
  std::chrono::milliseconds timeout_;
  torch::Tensor buffers_[2];
  int next_ = 0;  // the buffer the next Exchange fills
  std::unique_ptr<Work> in_flight_;
  bool pending_ = false;
};

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_SYNC_LAGGED_GRADIENT_H_
