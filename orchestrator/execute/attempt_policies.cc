// MayRetry, RetryDelay and DecideLive (see attempt_policies.h).
#include "orchestrator/execute/attempt_policies.h"

#include <cmath>

namespace batchlab::orchestrator {

bool MayRetry(bool retryable, int failures_before, int retries) {
  return retryable && failures_before < retries;
}

double RetryDelay(int failures, double backoff_seconds) {
  return backoff_seconds * std::pow(2.0, failures - 1);
}

LiveDecision DecideLive(const LiveFacts& f, double now) {
  const auto older_than_grace = [&](double since) { return now - since > f.grace_seconds; };
  if (f.deadline > 0 && now > f.deadline && !f.timed_out) {  // 1
    return {LiveAction::kTerminate, TerminateReason::kDeadline};
  }
  if (f.timed_out && older_than_grace(f.terminate_sent)) return {LiveAction::kKill};  // 2
  if (f.prune_sent > 0 && !f.timed_out && !f.stop_after_end && older_than_grace(f.prune_sent)) {
    return {LiveAction::kTerminate, TerminateReason::kIgnoredStop};  // 3
  }
  if (f.end_seen > 0 && !f.stop_after_end && !f.timed_out && older_than_grace(f.end_seen)) {
    return {LiveAction::kTerminate, TerminateReason::kNoExitAfterEnd};  // 4
  }
  if (f.stop_after_end && older_than_grace(f.terminate_sent)) return {LiveAction::kKill};  // 5
  return {};
}

}  // namespace batchlab::orchestrator
