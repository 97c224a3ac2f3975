// What happens to a run after one of its attempts ended: a pure decision from what the attempt
// reported (exit status, its end line, the orchestrator's own flags) to the run's next state,
// whether a retry may follow, and the message recorded. No I/O: the executor (sweep_executor.cc)
// gathers the report, calls DecideAttempt and acts on the verdict; attempt_verdict_test.cc
// covers every branch and the rules across all combinations, as ninja tests its Plan apart from
// its Builder.
//
//   AttemptReport r;  r.exit_code = 7;             // checkpointed on a signal (run_protocol.h)
//   AttemptVerdict v = DecideAttempt(r);          // v.preempted: a new attempt resumes it now
//
// The rules, first match wins:
//   1. a protocol exit code with its end line: that outcome (final, never retried);
//   2. an end line, whatever came after it (a hang, a kill, a timeout): its outcome;
//   3. exit 7 (preempted) unless the sweep stops, the run was pruned or timed out: pending again,
//      resumed at once without using a retry;
//   4. asked to stop by pruning: pruned;       5. the sweep is stopping: cancelled;
//   (a run asked to stop by the stall rule is stalled wherever 1, 2 or 4 would say pruned);
//   6. past resources.timeout_seconds: timed_out (retryable);
//   7. a protocol exit code without its end line, or any other exit: failed (retryable unless
//      exit 2, a bad config, or a job the backend can never run).
#ifndef BATCHLAB_ORCHESTRATOR_EXECUTE_ATTEMPT_VERDICT_H_
#define BATCHLAB_ORCHESTRATOR_EXECUTE_ATTEMPT_VERDICT_H_

#include <optional>
#include <string>

#include "results/store.h"

namespace batchlab::orchestrator {

struct AttemptReport {
  std::optional<int> exit_code;  // the job's exit code, when it exited
  std::optional<int> signal;     // the signal that killed it, when one did
  bool saw_end = false;          // its end line was ingested
  std::string end_outcome;       // that line's outcome ("" when none)
  bool timed_out = false;        // the orchestrator stopped it at resources.timeout_seconds
  bool stop_after_end = false;   // it wrote its end line but did not exit, and was stopped
  bool stopping = false;         // the sweep is being stopped (SIGINT, SIGTERM)
  bool prune_sent = false;       // the orchestrator asked it to stop (the stop file)
  std::string prune_reason;      // why
  bool stalled = false;          // that stop file was the stall rule's (spec "stall"), not pruning's
  bool unrunnable = false;       // the backend can never run it
  std::string detail;            // backend state text
  std::string stderr_tail;       // the end of its stderr.log, for the failure message
  double seconds = 0;            // how long the attempt ran
  double timeout_seconds = 0;    // resources.timeout_seconds
};

struct AttemptVerdict {
  results::RunState state = results::RunState::kFailed;  // kPending when preempted
  bool retryable = false;        // a failed/timed-out attempt may be retried
  bool preempted = false;        // requeue now, no retry used (rule 3)
  bool pruned_at_bound = false;  // it stopped itself at its prune_at bound: the caller names why
  std::optional<int> code;       // the exit code, or 128 + signal
  std::string message;
};

AttemptVerdict DecideAttempt(const AttemptReport& report);

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_EXECUTE_ATTEMPT_VERDICT_H_
