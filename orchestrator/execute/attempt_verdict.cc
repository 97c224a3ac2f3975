// DecideAttempt (see attempt_verdict.h).
#include "orchestrator/execute/attempt_verdict.h"

#include <fmt/format.h>

#include "base/run_protocol.h"
#include "orchestrator/execute/failure_reason.h"
#include "results/number_format.h"

namespace batchlab::orchestrator {
namespace {

using results::RunState;

}  // namespace

AttemptVerdict DecideAttempt(const AttemptReport& r) {
  AttemptVerdict v;
  v.code = r.exit_code;
  if (!v.code && r.signal) v.code = 128 + *r.signal;
  // No exit code (a signal): -1, no outcome's code.
  const std::optional<RunState> by_code = results::FinalStateOfExitCode(r.exit_code.value_or(-1));
  const std::optional<RunState> by_end = results::FinalStateOfOutcomeName(r.end_outcome);
  // The stall rule asks through the pruning stop file: the program ends as pruned.
  const auto stalled = [&r](RunState s) { return s == RunState::kPruned && r.stalled; };
  if (by_code && r.saw_end) {  // 1
    v.state = *by_code;
    v.pruned_at_bound = *by_code == RunState::kPruned && !r.prune_sent;
    if (stalled(v.state)) {
      v.state = RunState::kStalled;
      v.message = r.prune_reason;
    }
    return v;
  }
  if (by_end) {  // 2
    v.state = stalled(*by_end) ? RunState::kStalled : *by_end;
    v.message = fmt::format("{} after its end line ({}); the end line's outcome is kept",
                            r.timed_out        ? "timed out"
                            : r.stop_after_end ? "did not exit and was stopped"
                            : r.stopping       ? "was stopped by the sweep's stop"
                            : r.signal         ? fmt::format("killed by signal {}", *r.signal)
                            : r.exit_code      ? fmt::format("exited {}", *r.exit_code)
                                               : std::string("ended without an exit code"),
                            r.end_outcome);
    return v;
  }
  if (r.exit_code == protocol::ExitCodeFor(protocol::Outcome::kPreempted) && !r.stopping &&
      !r.prune_sent && !r.timed_out) {  // 3
    v.state = RunState::kPending;
    v.preempted = true;
    v.message = "preempted: checkpointed and exited 7; a new attempt resumes it";
    return v;
  }
  if (r.prune_sent) {  // 4
    v.state = r.stalled ? RunState::kStalled : RunState::kPruned;
    v.message = r.stalled ? r.prune_reason : "pruned: " + r.prune_reason;
    return v;
  }
  if (r.stopping) {  // 5
    v.state = RunState::kCancelled;
    v.message = "cancelled: the sweep was stopped";
    return v;
  }
  v.retryable = true;
  if (r.timed_out) {  // 6
    v.state = RunState::kTimedOut;
    v.message = fmt::format("timed out after {} s (resources.timeout_seconds = {})",
                            results::FixedNumber(r.seconds, 1), r.timeout_seconds);
    return v;
  }
  v.state = RunState::kFailed;  // 7
  if (by_code) {
    v.message = fmt::format("exited {} without writing its end line", *r.exit_code);
    return v;
  }
  v.message = r.signal      ? fmt::format("killed by signal {}", *r.signal)
              : r.exit_code ? fmt::format("exited {}", *r.exit_code)
                            : "ended without an exit code";
  if (!r.detail.empty()) v.message += " [" + r.detail + "]";
  // The first line is the reason people read: the program's last error line (failure_reason.h),
  // not a traceback header; the whole tail follows it in the recorded event.
  const std::string reason = FailureReason(r.stderr_tail);
  if (!reason.empty()) v.message += ": " + reason;
  if (!r.stderr_tail.empty() && r.stderr_tail != reason) v.message += "\n" + r.stderr_tail;
  // A bad config, or a job the backend can never run: retries cannot help.
  v.retryable = r.exit_code != protocol::kExitBadConfig && !r.unrunnable;
  return v;
}

}  // namespace batchlab::orchestrator
