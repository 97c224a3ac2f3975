// The executor's two timing policies, as pure functions of what it knows (no job, no clock, no
// database), so they are tested without processes (attempt_policies_test.cc) and a change of
// policy is an edit here, not in the poll loop (sweep_executor.cc):
//
//   * when a failed or timed-out attempt is tried again (MayRetry, RetryDelay): while the run has
//     retries left (resources.retries), after resources.retry_backoff_seconds doubled with every
//     failure — 2, 4, 8 s ... — so a flaky resource gets time to recover;
//   * what to do with an attempt still in flight (DecideLive): SIGTERM at its deadline, when it
//     ignores its stop file, or when it wrote its end line and does not exit; SIGKILL once a
//     SIGTERM has gone unanswered for the grace period.
//
//   LiveFacts facts = ...;  // from the in-flight attempt (run_table.h Active::live)
//   switch (DecideLive(facts, now).action) { ... }
//   if (MayRetry(verdict.retryable, slot.failures, spec.resources.retries)) ...
#ifndef BATCHLAB_ORCHESTRATOR_EXECUTE_ATTEMPT_POLICIES_H_
#define BATCHLAB_ORCHESTRATOR_EXECUTE_ATTEMPT_POLICIES_H_

namespace batchlab::orchestrator {

// Whether a run whose attempt just failed (or timed out) runs again: the attempt's verdict allows
// it (attempt_verdict.h: not a bad config, not a job the backend can never run) and the run has
// had fewer than `retries` failures in this call before this one.
bool MayRetry(bool retryable, int failures_before, int retries);

// How long the retry after the `failures`-th failure (1, 2, ...) waits: `backoff_seconds`
// doubled after every failed attempt (backoff, 2 x backoff, 4 x backoff, ...).
double RetryDelay(int failures, double backoff_seconds);

// What bears on ending an attempt in flight. Times are the executor's clock in seconds; 0 means
// "not yet" (or, for the deadline, "none"). Several facts can hold at once (an attempt may be
// asked to stop, write its end line and then reach its deadline), so they are kept apart.
struct LiveFacts {
  double deadline = 0;          // its start + resources.timeout_seconds (0: no timeout)
  double grace_seconds = 10;    // ExecutorOptions::terminate_grace_seconds
  bool timed_out = false;       // it was sent SIGTERM at its deadline
  bool stop_after_end = false;  // it was sent SIGTERM for ignoring its stop file or for not
                                // exiting after its end line
  double terminate_sent = 0;    // when the last SIGTERM went
  double prune_sent = 0;        // when its stop file (pruning or the stall rule) was written
  double end_seen = 0;          // when its end line was first ingested
};

enum class LiveAction { kNone, kTerminate, kKill };

// Why a kTerminate: the executor records it (a timeout is a verdict of its own; the other two
// only mean the program had its chance to stop by itself).
enum class TerminateReason { kNone, kDeadline, kIgnoredStop, kNoExitAfterEnd };

struct LiveDecision {
  LiveAction action = LiveAction::kNone;
  TerminateReason reason = TerminateReason::kNone;  // set with kTerminate
};

// The action for an attempt in flight at `now`, first match wins:
//   1. past its deadline and not yet timed out: terminate (kDeadline), even if it was already
//      sent SIGTERM for another reason (the timeout is what its verdict then says);
//   2. timed out and its SIGTERM older than the grace period: kill;
//   3. its stop file older than the grace period, not yet terminated: terminate (kIgnoredStop);
//   4. its end line older than the grace period, not yet terminated: terminate (kNoExitAfterEnd);
//   5. terminated by 3 or 4 and that SIGTERM older than the grace period: kill.
// The caller sends the signal and, on kTerminate, sets terminate_sent = now and timed_out (1) or
// stop_after_end (3, 4). A kill is repeated at every look until the job ends (it is idempotent).
LiveDecision DecideLive(const LiveFacts& facts, double now);

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_EXECUTE_ATTEMPT_POLICIES_H_
