// The executor's pure timing policies (attempt_policies.h): retries and their backoff, and the
// SIGTERM -> SIGKILL escalation of an attempt in flight, on plain numbers (no job, no clock).
#include "orchestrator/execute/attempt_policies.h"

#include <gtest/gtest.h>

namespace batchlab::orchestrator {
namespace {

TEST(RetryPolicyTest, RetriesWhileRetryableAndFailuresAreBelowTheLimit) {
  EXPECT_TRUE(MayRetry(true, 0, 1));
  EXPECT_FALSE(MayRetry(true, 1, 1));  // the one retry is used
  EXPECT_TRUE(MayRetry(true, 2, 3));
  EXPECT_FALSE(MayRetry(true, 0, 0));   // retries: 0
  EXPECT_FALSE(MayRetry(false, 0, 5));  // a bad config or an unrunnable job: never
}

TEST(RetryPolicyTest, BackoffDoublesAfterEveryFailure) {
  EXPECT_DOUBLE_EQ(RetryDelay(1, 2), 2);
  EXPECT_DOUBLE_EQ(RetryDelay(2, 2), 4);
  EXPECT_DOUBLE_EQ(RetryDelay(3, 2), 8);
  EXPECT_DOUBLE_EQ(RetryDelay(4, 0.5), 4);
  EXPECT_DOUBLE_EQ(RetryDelay(3, 0), 0);  // no backoff: at once
}

LiveFacts Facts() {
  LiveFacts f;
  f.grace_seconds = 10;
  return f;
}

void ExpectDecision(const LiveFacts& f, double now, LiveAction action,
                    TerminateReason reason = TerminateReason::kNone) {
  const LiveDecision d = DecideLive(f, now);
  EXPECT_EQ(d.action, action) << "at " << now;
  EXPECT_EQ(d.reason, reason) << "at " << now;
}

TEST(DecideLiveTest, NothingToDoForAnAttemptWithNoDeadlineStopOrEnd) {
  ExpectDecision(Facts(), 1e6, LiveAction::kNone);
}

TEST(DecideLiveTest, DeadlineTerminatesThenKillsAfterTheGracePeriod) {
  LiveFacts f = Facts();
  f.deadline = 100;
  ExpectDecision(f, 100, LiveAction::kNone);  // not past it yet
  ExpectDecision(f, 100.5, LiveAction::kTerminate, TerminateReason::kDeadline);
  f.timed_out = true;
  f.terminate_sent = 100.5;
  ExpectDecision(f, 110.5, LiveAction::kNone);  // the grace period is not over
  ExpectDecision(f, 111, LiveAction::kKill);
  ExpectDecision(f, 200, LiveAction::kKill);  // again at every look until it ends
}

TEST(DecideLiveTest, IgnoredStopFileTerminatesThenKills) {
  LiveFacts f = Facts();
  f.prune_sent = 50;
  ExpectDecision(f, 60, LiveAction::kNone);
  ExpectDecision(f, 60.5, LiveAction::kTerminate, TerminateReason::kIgnoredStop);
  f.stop_after_end = true;
  f.terminate_sent = 60.5;
  ExpectDecision(f, 70, LiveAction::kNone);
  ExpectDecision(f, 71, LiveAction::kKill);
}

TEST(DecideLiveTest, EndLineWithoutExitTerminatesThenKills) {
  LiveFacts f = Facts();
  f.end_seen = 20;
  ExpectDecision(f, 30, LiveAction::kNone);
  ExpectDecision(f, 31, LiveAction::kTerminate, TerminateReason::kNoExitAfterEnd);
  f.stop_after_end = true;
  f.terminate_sent = 31;
  ExpectDecision(f, 41.5, LiveAction::kKill);
}

TEST(DecideLiveTest, TheDeadlineStillTerminatesARunAlreadyStoppedForAnotherReason) {
  // Sent SIGTERM for ignoring its stop file at 60; its deadline at 65 sends another and restarts
  // the grace period (its verdict is then timed_out).
  LiveFacts f = Facts();
  f.deadline = 65;
  f.prune_sent = 50;
  f.stop_after_end = true;
  f.terminate_sent = 60;
  ExpectDecision(f, 66, LiveAction::kTerminate, TerminateReason::kDeadline);
  f.timed_out = true;
  f.terminate_sent = 66;
  ExpectDecision(f, 71, LiveAction::kNone);  // 5 would kill (60 + 10 < 71), but it timed out at 66
  ExpectDecision(f, 76.5, LiveAction::kKill);
}

TEST(DecideLiveTest, ATimedOutRunIsNeverTerminatedAgainForItsStopFileOrEndLine) {
  LiveFacts f = Facts();
  f.deadline = 10;
  f.timed_out = true;
  f.terminate_sent = 11;
  f.prune_sent = 1;
  f.end_seen = 1;
  ExpectDecision(f, 15, LiveAction::kNone);
  ExpectDecision(f, 21.5, LiveAction::kKill);
}

TEST(DecideLiveTest, AZeroGracePeriodStillWaitsForTheNextLook) {
  // Facts stamped at `now` never act at the same look: the comparisons are strict.
  LiveFacts f = Facts();
  f.grace_seconds = 0;
  f.prune_sent = 5;
  ExpectDecision(f, 5, LiveAction::kNone);
  ExpectDecision(f, 5.01, LiveAction::kTerminate, TerminateReason::kIgnoredStop);
}

}  // namespace
}  // namespace batchlab::orchestrator
