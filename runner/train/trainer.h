// The data-parallel training loop of one rank, top to bottom:
//
//   per step:  data      gather this rank's local batch rows (shard_sampler.h) into a buffer; the
//                        batch is the batch schedule's of the step (UseBatchOfStep)
//              compute   `accumulation` micro-batches: forward, loss / A, backward; the gradients
//                        of all parameters are views into ONE flat buffer (so the sum over
//                        micro-batches is the local-batch mean; with allreduce and K > 1 the
//                        buffers are the communication buckets themselves)
//              exchange  the sync mode's StepExchange (sync/step_exchange.h) combines the ranks'
//                        work and the step's shared values (loss, elapsed time, stop and preempt
//                        requests), so every rank sees the same values and takes the same stop
//                        decisions; allreduce: GradientBuckets (gradient_buckets.h) averages the
//                        gradients in fused buckets, the shared values riding in the last one
//              update    LR from the schedule, optimizer step (then the exchange's AfterUpdate:
//                        local SGD's parameter average)
//   every eval.every_steps (and at the end): loss/accuracy on the held-out set, sharded over
//   ranks and summed; target and divergence checks; budget in steps/epochs/samples/seconds.
//
// Gradient noise (docs/protocol.md, McCandlish et al. 2018): on measured steps, with K > 1 ranks
// the local gradient (B_small = local batch, |g|^2 averaged over ranks) against the averaged one
// (B_big = global batch); on one rank, micro-batch against accumulated gradient (B_small = micro
// batch), and without accumulation the step is run as two half-batches (the same update).
//
// comm.sync picks how ranks combine their work (docs/sync.md), parsed once into the config's
// SyncMode; what a mode can do is base/sync_mode.h's table, how it does it runner/sync/
// sync_mode_parts.h's. The constructor makes the mode's parts and picks its loop, so Run() is one
// call whatever the mode: `allreduce`, `lag` and `local_sgd` share the loop above (RunCollective)
// and differ in their StepExchange, which also saves and restores the mode's state in
// checkpoints; `async_ps` and `backup` run a parameter server on rank 0 (trainer_ps.cc). Every
// step line carries wait_seconds, staleness and effective_batch.
//
// The run's length (steps per epoch, samples per step, total steps) is base/run_values.h's
// LengthOf, as the orchestrator computes it. The trainer's parts by file: the constructor, the
// loop and the collective step here (trainer.cc); the data's placement and a step's batch
// (trainer_data.cc); forward, backward and the flat gradient buffer (trainer_gradients.cc); the
// run's progress, evaluations, decisions and lines (trainer_progress.cc); the parameter-server
// loops (trainer_ps.cc); checkpoints (trainer_checkpoint.cc); branch starts (branch_start.cc).
//
//   Trainer trainer(config, data, comm.get(), writer.get(), rank);   // comm may be null if K = 1
//   Outcome outcome = trainer.Run();   // writes start, step, eval and end lines (rank 0)
//   int code = ExitCodeFor(outcome);
#ifndef BATCHLAB_RUNNER_TRAIN_TRAINER_H_
#define BATCHLAB_RUNNER_TRAIN_TRAINER_H_

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "base/lr_schedule.h"
#include "base/run_protocol.h"
#include "base/run_values.h"
#include "base/sync_mode.h"
#include "runner/checkpoint/checkpoint_file.h"
#include "runner/comm/communicator.h"
#include "runner/data/dataset.h"
#include "runner/data/shard_sampler.h"
#include "runner/config/device.h"
#include "runner/train/metrics_writer.h"
#include "runner/models/models.h"
#include "runner/config/precision.h"
#include "runner/config/run_config.h"
#include "runner/sync/step_exchange.h"
#include "runner/sync/straggler.h"

namespace batchlab::runner {

// The outcomes and their exit codes: base/run_protocol.h (kPreempted: checkpointed, exit 7).
using Outcome = protocol::Outcome;
using protocol::ExitCodeFor;
using protocol::OutcomeName;

// An earlier attempt of this run whose checkpoints a new attempt may resume from.
struct EarlierAttempt {
  int64_t attempt = 0;
  std::string dir;  // its attempt folder (checkpoints/ below it)
};

struct EvalResult {
  double loss = 0;
  double accuracy = 0;  // classification only
};

class Trainer {
 public:
  // `comm` may be null only when world_size is 1; `metrics` is null on ranks other than 0.
  Trainer(const RunConfig& config, const Dataset& data, Communicator* comm, MetricsWriter* metrics,
          int rank);
  ~Trainer();

  Outcome Run();

  // Where rank 0 writes its lines (null: nowhere). main() attaches the file only after the
  // constructor has accepted the config, so a bad config leaves no metrics file behind.
  void set_metrics(MetricsWriter* metrics) { metrics_ = metrics; }
  // The orchestrator's stop file (docs/protocol.md: `stop` beside the config file). Rank 0 looks
  // for it; once it exists every rank ends the run after the current step (outcome `pruned`).
  // The same folder's prune_at file, when present, holds the bound at which the run stops itself
  // the same way: after an evaluation at step s without the target, with s + 1 >= its
  // stop_from_step.
  void set_stop_file(std::string path);
  // The attempt folder (docs/protocol.md): the stop, prune_at and preempt files, and the
  // checkpoints/ folder this attempt writes (config "checkpoint"). Reads resume.json there: the
  // earlier attempts whose newest valid checkpoint Run() resumes from.
  void set_attempt_dir(const std::string& dir);
  // Resume from these earlier attempts' checkpoints (newest first); what set_attempt_dir reads.
  void set_resume_from(std::vector<EarlierAttempt> earlier) { resume_from_ = std::move(earlier); }
  // A branch run (config "branch"): the trunk's attempt folders, newest first, one of which holds
  // the trunk's checkpoint at branch.at_step; what set_attempt_dir reads from branch_from.json.
  void set_trunk_dirs(std::vector<std::string> dirs) { trunk_dirs_ = std::move(dirs); }
  // The step Run() resumed from (0: started fresh).
  int64_t resumed_from_step() const { return resumed_step_; }

  // All parameters flattened in registration order (float32), for --dump-params and tests.
  torch::Tensor FlatParameters() const;
  // The loss of every step so far (the global batch mean), for tests.
  const std::vector<double>& losses() const { return losses_; }
  int64_t steps_done() const { return step_; }
  int64_t total_steps() const { return total_steps_; }

  // collective: every rank calls it and evaluates its share; otherwise this rank evaluates the
  // whole held-out set alone (the parameter server).
  EvalResult Evaluate(bool collective = true);

 private:
  // What the run has seen so far, shared by the loops (trainer.cc, trainer_ps.cc).
  struct Progress {
    bool diverged = false, reached = false, stopped = false;
    int64_t target_step = 0, target_samples = 0;
    double target_seconds = 0, initial_loss = 0, elapsed = 0;
    bool have_initial_loss = false;
    int64_t last_eval_step = -1;
    EvalResult last_eval;
  };
  void WriteStart();
  void GatherBatch();  // this step's rows into batch_x_, batch_y_
  void RecordTarget(double value, double seconds);
  void EvalAndLog(bool collective);
  // After step_'s update, with the loss every rank agrees on: divergence, target, evaluation,
  // stop and seconds budget. Returns true when the run ends now.
  bool Decide(double loss, bool stop, bool collective_eval);
  Outcome CurrentOutcome() const;        // from progress_ (and whether a target is set)
  Outcome Finish(bool collective_eval);  // final evaluation and the end line
  // The step line's common part (rank 0 writes it once the step's values are in).
  nlohmann::ordered_json StepLine(double loss, const SyncFacts& sync) const;
  Outcome RunCollective();           // the collective modes (trainer.cc)
  // RunCollective's step, after the exchange: fp16's unscale and Inf/NaN check (false: the step
  // is skipped), the noise measurement's part of the step line (rank 0, on measured steps), the
  // optimizer step, the step line.
  bool UnscaleGradients(ExchangeResult* r);
  nlohmann::ordered_json NoiseLine(bool measure, const ExchangeResult& r);
  void Update(double lr, bool apply);
  void WriteStepLine(const StepInputs& in, const ExchangeResult& r,
                     const nlohmann::ordered_json& noise, double lr);
  void ApplyDrained();  // lag: the gradient still in flight after the last step
  Outcome RunServer();               // the parameter-server modes: rank 0 (trainer_ps.cc)
  Outcome RunWorker();               // the parameter-server modes: the other ranks
  // The data set where the steps read it: on a CUDA device when it fits (copied once), else
  // the host's tensors (gathered into pinned buffers and copied without blocking).
  void PlaceData();
  std::vector<torch::Tensor> GradientTensors() const;  // grads_, or every parameter's .grad()
  void BindGradientsToFlatBuffer();  // one rank: every .grad() a view into grads_
  void ZeroGradients();
  double GradSquaredNorm();  // of the model's gradients
  // Forward+backward of this rank's local batch into the flat gradient buffer; returns the
  // local mean loss. On measured one-rank steps fills gns_sq_small_ (micro-batch norms).
  double ComputeGradients(bool measure_micro);
  torch::Tensor Loss(const torch::Tensor& output, const torch::Tensor& target);
  void Allreduce(torch::Tensor& tensor, ReduceOp op);
  double ElapsedSeconds() const;
  // Training samples seen after `steps` steps (the batch schedule's; async_ps: local batches).
  int64_t SamplesAfter(int64_t steps) const;
  // Before step `step` (from 1): its batch from the schedule; at a switch the sampler and the
  // batch buffers take the new local batch.
  void UseBatchOfStep(int64_t step);
  double LrAt(int64_t step) const;  // step `step`'s LR (from 1), at its batch
  void SizeBatchBuffers(int64_t local);
  // Rank 0: the stop file exists (checked at most every 0.1 s) or the last evaluation passed the
  // prune_at bound.
  bool StopRequested();
  void CheckPruneBound();  // rank 0, after an evaluation without the target
  // This rank was signalled (SIGUSR2, SIGTERM: preempt_signal.h) or, on rank 0, the attempt
  // folder has a preempt file (checked at most every 0.1 s).
  bool PreemptRequested();

  // Checkpoints (trainer_checkpoint.cc); async_ps/backup save on the server's clock (trainer_ps.cc),
  // and their resume is not bit for bit (docs/sync.md, docs/spec.md "Branch study").
  bool CheckpointsEnabled() const;
  bool CheckpointDue() const;  // after step_, from values every rank shares
  void SaveCheckpoint();       // this rank's shard of the checkpoint at step_
  void PruneCheckpoints();     // keep the newest `keep` (and at_steps) of this attempt
  // Before the first step: every rank agrees on the newest checkpoint of the earlier attempts
  // whose shards all load, and restores it; rank 0 writes the resume line.
  void MaybeResume();
  // Branch study (branch_start.cc): a branch run that did not resume from a checkpoint of its
  // own starts from the trunk's at branch.at_step (parameters, optimizer state, data position).
  void ReadBranchFrom(const std::string& attempt_dir);
  void MaybeStartBranch();
  NamedTensors StateTensors();
  nlohmann::json StateScalars() const;
  // `file` is this rank's shard of the checkpoint (or, written by other ranks, rank
  // rank_ mod K's); `format1_orders` every rank's shard order of a format-1 checkpoint (K > 1).
  void RestoreState(const CheckpointFile& file, const std::vector<torch::Tensor>& format1_orders);
  // Elastic resume (trainer_checkpoint.cc): reads the shard this rank continues from, checked
  // against the run; throws CheckpointRejected, or BadConfig when the sync mode cannot re-shard.
  CheckpointFile ReadResumeShard(const std::string& dir, int64_t step, std::string* path,
                                 std::vector<torch::Tensor>* format1_orders) const;
  // Restores the data cursor of `file` (format 2: global; format 1: rebuilt from the shards).
  void RestoreDataCursor(const CheckpointFile& file,
                         const std::vector<torch::Tensor>& format1_orders);
  // The hash a checkpoint of `format` holds: the config without the run's identity and files,
  // and (format 2) without how it is split (nodes, ranks_per_node, world_size, the local and
  // micro batch sizes).
  std::string ConfigHash(int format = kCheckpointFormat) const;
  // `path` checked against this run (its config hash of the file's format); throws
  // CheckpointRejected.
  CheckpointFile ReadOfThisRun(const std::string& path) const;

  const RunConfig& config_;
  const Dataset& data_;
  Communicator* comm_;
  MetricsWriter* metrics_;
  int rank_;
  int world_;

  std::shared_ptr<Model> model_;
  std::vector<torch::Tensor> params_;
  int64_t param_count_ = 0;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::unique_ptr<run_values::LrSchedule> lr_;
  std::unique_ptr<ShardSampler> sampler_;

  // The rank's device (device.h): the CPU, or the CUDA device main.cc chose; the model, its
  // gradients and optimizer state, the buckets and (where it fits) the data set live there.
  torch::Device device_{torch::kCPU};
  std::unique_ptr<StepClock> clock_;  // a step's phase times (CUDA events on a CUDA device)
  torch::Tensor train_x_, train_y_, train_pixels_, test_x_, test_y_;  // on device_ or the host
  bool data_on_device_ = false;
  torch::Tensor host_x_, host_y_;  // pinned staging of a batch (CUDA, data set on the host)
  torch::Tensor rows_host_, rows_device_;  // a step's row indices (CUDA, data set on it)
  Precision precision_ = Precision::kFp32;  // config "precision", parsed once
  std::unique_ptr<DynamicLossScaler> scaler_;  // fp16 only
  // The loop of the run's mode and rank (RunCollective, RunServer or RunWorker), picked once.
  Outcome (Trainer::*loop_)() = nullptr;
  // allreduce, lag, local_sgd: how a step's work is combined (sync/step_exchange.h), with the
  // mode's state (buckets, the gradient in flight, the last average); null for async_ps, backup.
  std::unique_ptr<StepExchange> exchange_;
  // The factor the loss carries before backward: the exchange's (allreduce K > 1: 1/K, the
  // buckets are summed), else 1.
  double grad_scale_ = 1.0;
  std::string stop_file_;
  std::string prune_file_;    // beside stop_file_
  std::string preempt_file_;  // beside stop_file_
  std::string checkpoint_dir_;  // "" = no checkpoints (no attempt folder)
  std::vector<EarlierAttempt> resume_from_;
  std::vector<std::string> trunk_dirs_;  // a branch run: the trunk's attempt folders
  int64_t resumed_step_ = 0;
  int64_t last_checkpoint_step_ = 0;
  int64_t last_checkpoint_samples_ = 0;
  double last_checkpoint_seconds_ = 0;
  std::chrono::steady_clock::time_point last_preempt_check_{};
  bool preempt_file_seen_ = false;
  bool prune_bound_passed_ = false;
  std::chrono::steady_clock::time_point last_stop_check_{};
  torch::Tensor grads_;                // all gradients, flat (unless the exchange holds them)
  torch::Tensor prev_grad_, scratch_;  // one-rank noise measurement
  torch::Tensor batch_x_, batch_y_;    // [local_batch, F], [local_batch] or [local_batch, 1]
  torch::Tensor batch_pixels_;         // uint8 [local_batch, F] when the data has train_pixels

  Progress progress_;
  std::unique_ptr<Straggler> straggler_;
  // The run's length (base/run_values.h): steps per epoch, samples per step, total steps, and
  // config "batch_schedule" (constant without one; first_batch = batch_size).
  run_values::RunLength length_;
  // The batch of the current step, and the LR schedule of each batch size the run trains at
  // (lr.rule, with the warmup and decay counted in the run's steps).
  int64_t batch_ = 0, local_batch_ = 0;
  std::map<int64_t, std::unique_ptr<run_values::LrSchedule>> lr_by_batch_;
  int64_t step_ = 0;
  int64_t total_steps_ = 0;  // length_.total_steps (0 = only a seconds budget)
  double gns_sq_small_ = 0;
  int64_t gns_b_small_ = 0;
  std::vector<double> losses_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_TRAIN_TRAINER_H_
