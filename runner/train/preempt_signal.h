// The signals that ask a run to checkpoint and exit `preempted` (base/run_protocol.h: SIGUSR2,
// which Slurm sends before a time limit with `--signal=B:USR2@N` and mpirun forwards, and SIGTERM:
// scancel, preemption, the orchestrator's stop). The handler only sets a flag; the trainer reads
// it between steps, shares it with every rank in the step's own allreduce, and all ranks write
// their checkpoint after the same step (trainer.cc).
//
// Outside training (loading data, an idle warm worker, MPI start-up) the signals keep their
// default action, so a process that cannot checkpoint still ends at once.
//
//   InstallPreemptHandlers();            // once, in main
//   { PreemptWindow window;              // Trainer::Run: the signals now only set the flag
//     if (PreemptSignalled()) { ... } }  // between steps
#ifndef BATCHLAB_RUNNER_TRAIN_PREEMPT_SIGNAL_H_
#define BATCHLAB_RUNNER_TRAIN_PREEMPT_SIGNAL_H_

namespace batchlab::runner {

void InstallPreemptHandlers();
bool PreemptSignalled();
// Tests: forget an earlier signal.
void ClearPreemptSignal();

// While one exists, the signals set the flag (cleared when it opens); otherwise they end the
// process as they would without a handler.
class PreemptWindow {
 public:
  PreemptWindow();
  ~PreemptWindow();
  PreemptWindow(const PreemptWindow&) = delete;
  PreemptWindow& operator=(const PreemptWindow&) = delete;
};

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_TRAIN_PREEMPT_SIGNAL_H_
