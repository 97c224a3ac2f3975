// How the ranks of a collective run combine a step's work (comm.sync allreduce, lag, local_sgd;
// docs/sync.md): one StepExchange per mode, made once from the parsed SyncMode, owning the mode's
// state (buckets, the gradient in flight, the last average) and saving it into checkpoints. The
// parameter-server modes (async_ps, backup) run loops of their own (trainer_ps.cc), with their
// messages and update rules in sync/parameter_server.h, not an exchange.
//
// Every mode also carries the step's shared values (loss, elapsed seconds, the stop and preempt
// requests), so every rank sees the same values and takes the same decisions at the same step:
//   AllreduceExchange  K > 1: gradients summed in fused buckets (gradient_buckets.h), the loss
//                      scaled by 1/K before backward; the shared values ride in one extra
//                      5-float "gradient" of the last bucket. One rank: nothing to exchange.
//   LagExchange        the step's gradient starts averaging and the previous step's average is
//                      applied (lagged_gradient.h); the shared values in an allreduce of their own.
//   LocalSgdExchange   nothing before the update; after it, every H-th step (every evaluation,
//                      the last step) parameters, optimizer state and the shared values are
//                      averaged (parameter_average.h). Between averages the ranks do not agree.
//
//   std::unique_ptr<StepExchange> exchange = PartsOf(mode).exchange(context);  // sync_mode_parts.h
//   per step:  ExchangeResult r = exchange->Exchange(in);    // after forward/backward
//              if (r.apply) optimizer->step();
//              exchange->AfterUpdate(in, &r);                // local SGD averages here
//              if (r.agreed) ... decisions on r.loss, r.stop, r.preempt ...
//   at the end: torch::Tensor last = exchange->Drain();      // lag: the average still in flight
//   checkpoint: exchange->Save(&tensors, &state);  exchange->Restore(file);
#ifndef BATCHLAB_RUNNER_SYNC_STEP_EXCHANGE_H_
#define BATCHLAB_RUNNER_SYNC_STEP_EXCHANGE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "runner/checkpoint/checkpoint_file.h"
#include "runner/comm/communicator.h"

namespace batchlab::runner {

// A step's synchronization, as its step line reports it.
struct SyncFacts {
  double wait_seconds = 0;
  double staleness = 0;
  int64_t effective_batch = 0;
};

// What an exchange is made with (once, before the first step).
struct SyncContext {
  Communicator* comm = nullptr;  // may be null on one rank
  int world = 1;
  std::chrono::milliseconds timeout{0};  // comm.timeout_seconds
  std::vector<torch::Tensor> params;     // the model's, in registration order
  int64_t param_count = 0;
  torch::TensorOptions options;  // the gradients' device (float32)
  double bucket_mb = 0;          // comm.bucket_mb (allreduce, K > 1)
  int64_t sync_every = 1;        // comm.sync_every (local_sgd: H)
  int64_t eval_every_steps = 0;  // local_sgd also averages at every evaluation
  int64_t local_batch_size = 0;  // local_sgd's effective batch
  // The trainer's checks, called where the mode fills the shared values (rank 0 reads the stop
  // and preempt files at most every 0.1 s: called at the same points as ever).
  std::function<bool()> stop_requested;
  std::function<bool()> preempt_requested;
  std::function<double()> grad_squared_norm;  // |this rank's gradient|^2 (noise measurement)
};

// What the trainer hands the exchange at each step.
struct StepInputs {
  int64_t step = 0;         // from 1
  int64_t total_steps = 0;  // 0: only a seconds budget
  int64_t batch = 0;        // this step's global batch (the batch schedule's)
  bool measure = false;     // a gradient-noise step (MeasuresNoise modes only)
  double local_loss = 0;    // this rank's local-batch mean loss
  double loss_scale = 1;    // fp16's S this step (the gradients carry it), else 1
  torch::Tensor grads;      // the flat gradient buffer (undefined when the buckets hold them)
  torch::optim::Optimizer* optimizer = nullptr;  // local_sgd averages its state
  std::chrono::steady_clock::time_point start;     // the run's (seconds count from it)
  std::chrono::steady_clock::time_point computed;  // after forward/backward
  std::chrono::steady_clock::time_point updated;   // after the optimizer (AfterUpdate)
};

// What a step's exchange decided.
struct ExchangeResult {
  double loss = 0;  // the step's loss: the global mean where the ranks share it
  bool stop = false, preempt = false;
  bool apply = true;   // the optimizer steps (lag: not on the first step)
  bool agreed = true;  // the values above are every rank's (local_sgd: only where it averages)
  std::optional<double> elapsed;       // the seconds every rank agrees on (K > 1)
  std::optional<double> comm_seconds;  // the step line's, when not the exchange phase's time
  double gns_sq_small = 0;  // allreduce K > 1, measured: |local gradient|^2 averaged over ranks
  SyncFacts facts;
};

class StepExchange {
 public:
  virtual ~StepExchange() = default;
  StepExchange(const StepExchange&) = delete;
  StepExchange& operator=(const StepExchange&) = delete;

  // After forward/backward, before the optimizer: combine the gradients (in place) and the
  // step's shared values.
  virtual ExchangeResult Exchange(const StepInputs& in) = 0;
  // After the optimizer step (local_sgd: the parameter average).
  virtual void AfterUpdate(const StepInputs& in, ExchangeResult* r) {
    (void)in;
    (void)r;
  }
  // After the last step: the averaged gradient still in flight (lag), or undefined.
  virtual torch::Tensor Drain() { return torch::Tensor(); }
  // Leaving early (preempted without checkpoints): no collective left open.
  virtual void Settle() {}
  // The mode's state in a checkpoint (lag: "lag.in_flight"; local_sgd: "last_average"), and
  // back from one.
  virtual void Save(NamedTensors* tensors, nlohmann::json* state) {
    (void)tensors;
    (void)state;
  }
  virtual void Restore(const CheckpointFile& file) { (void)file; }

  // Whether the gradients live in this exchange's buckets (else the trainer binds them to one
  // flat buffer and broadcasts rank 0's parameters itself).
  virtual bool HoldsGradients() const { return false; }
  // The factor the loss carries before backward (allreduce K > 1: 1/K, the buckets are summed).
  virtual double GradientScale() const { return 1.0; }
  // Whether the step may measure the gradient noise (config gns.every_steps): allreduce only.
  virtual bool MeasuresNoise() const { return false; }

 protected:
  StepExchange() = default;
};

// The exchange of each collective mode, made through the mode's entry in sync_mode_parts.h.
// AllreduceExchange with K > 1 broadcasts rank 0's parameters (a collective: every rank makes it
// at the same point).
std::unique_ptr<StepExchange> MakeAllreduceExchange(SyncContext context);
std::unique_ptr<StepExchange> MakeLagExchange(SyncContext context);
std::unique_ptr<StepExchange> MakeLocalSgdExchange(SyncContext context);

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_SYNC_STEP_EXCHANGE_H_
