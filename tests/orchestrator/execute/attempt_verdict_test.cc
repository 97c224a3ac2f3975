// DecideAttempt without processes (attempt_verdict.h): each rule on its own, then the rules that
// must hold across every combination of what an attempt can report.
#include "orchestrator/execute/attempt_verdict.h"

#include <gtest/gtest.h>

#include <vector>

namespace batchlab::orchestrator {
namespace {

using results::RunState;

AttemptReport Exited(int code, std::string end_outcome = "") {
  AttemptReport r;
  r.exit_code = code;
  r.saw_end = !end_outcome.empty();
  r.end_outcome = std::move(end_outcome);
  return r;
}

TEST(AttemptVerdictTest, AProtocolExitWithItsEndLineIsThatOutcome) {
  const std::vector<std::pair<int, RunState>> cases = {
      {0, RunState::kCompleted},       {3, RunState::kTargetReached},
      {4, RunState::kDiverged},        {5, RunState::kBudgetExhausted},
      {6, RunState::kPruned}};
  for (const auto& [code, state] : cases) {
    const AttemptVerdict v = DecideAttempt(Exited(code, results::RunStateName(state)));
    EXPECT_EQ(v.state, state) << code;
    EXPECT_FALSE(v.retryable);
    EXPECT_FALSE(v.preempted);
    EXPECT_EQ(v.code, code);
  }
  // Pruned by itself at its prune_at bound (the caller names the bar) or by the stop file.
  EXPECT_TRUE(DecideAttempt(Exited(6, "pruned")).pruned_at_bound);
  AttemptReport asked = Exited(6, "pruned");
  asked.prune_sent = true;
  EXPECT_FALSE(DecideAttempt(asked).pruned_at_bound);
}

TEST(AttemptVerdictTest, TheEndLineWinsOverWhatCameAfterIt) {
  AttemptReport r = Exited(1, "target_reached");
  r.timed_out = true;
  AttemptVerdict v = DecideAttempt(r);
  EXPECT_EQ(v.state, RunState::kTargetReached);
  EXPECT_EQ(v.message, "timed out after its end line (target_reached); the end line's outcome is kept");
  r = AttemptReport{};
  r.signal = 9;
  r.saw_end = true;
  r.end_outcome = "completed";
  v = DecideAttempt(r);
  EXPECT_EQ(v.state, RunState::kCompleted);
  EXPECT_EQ(v.code, 137);
  EXPECT_NE(v.message.find("killed by signal 9"), std::string::npos);
}

TEST(AttemptVerdictTest, PreemptedIsResumedWithoutARetryUnlessStoppedPrunedOrTimedOut) {
  AttemptVerdict v = DecideAttempt(Exited(7));
  EXPECT_TRUE(v.preempted);
  EXPECT_EQ(v.state, RunState::kPending);
  EXPECT_FALSE(v.retryable);
  AttemptReport r = Exited(7);
  r.stopping = true;
  EXPECT_EQ(DecideAttempt(r).state, RunState::kCancelled);
  r = Exited(7);
  r.prune_sent = true;
  r.prune_reason = "slower than B=64";
  EXPECT_EQ(DecideAttempt(r).state, RunState::kPruned);
  EXPECT_EQ(DecideAttempt(r).message, "pruned: slower than B=64");
  r = Exited(7);
  r.timed_out = true;
  r.seconds = 12.34;
  r.timeout_seconds = 10;
  v = DecideAttempt(r);
  EXPECT_EQ(v.state, RunState::kTimedOut);
  EXPECT_TRUE(v.retryable);
  EXPECT_EQ(v.message, "timed out after 12.3 s (resources.timeout_seconds = 10)");
}

TEST(AttemptVerdictTest, FailuresSayWhyAndOnlyHopelessOnesAreNotRetried) {
  AttemptVerdict v = DecideAttempt(Exited(3));  // a target exit without its end line
  EXPECT_EQ(v.state, RunState::kFailed);
  EXPECT_TRUE(v.retryable);
  EXPECT_EQ(v.message, "exited 3 without writing its end line");
  AttemptReport r = Exited(1);
  r.detail = "FAILED";
  r.stderr_tail = "batchlab-runner[rank 0]: out of memory";
  v = DecideAttempt(r);
  EXPECT_EQ(v.message, "exited 1 [FAILED]: batchlab-runner[rank 0]: out of memory");
  EXPECT_TRUE(v.retryable);
  EXPECT_FALSE(DecideAttempt(Exited(2)).retryable);  // a bad config
  r = AttemptReport{};
  r.unrunnable = true;
  r.signal = 15;
  v = DecideAttempt(r);
  EXPECT_FALSE(v.retryable);
  EXPECT_EQ(v.code, 143);
  EXPECT_EQ(DecideAttempt(AttemptReport{}).message, "ended without an exit code");
}

// Every combination of exit code, signal, end line and flags.
TEST(AttemptVerdictTest, AStopAskedByTheStallRuleIsStalledNotPruned) {
  // The program obeys the stop file the same way (end line "pruned", exit 6), or is stopped, or
  // ends otherwise: the run is stalled, with the rule's reason, never retried.
  AttemptReport obeyed = Exited(6, "pruned");
  AttemptReport killed = Exited(143);
  AttemptReport after_end = Exited(143, "pruned");
  for (AttemptReport* r : {&obeyed, &killed, &after_end}) {
    r->prune_sent = true;
    r->stalled = true;
    r->prune_reason = "stalled: its last 5 evaluations of test_accuracy were at chance";
    const AttemptVerdict v = DecideAttempt(*r);
    EXPECT_EQ(v.state, RunState::kStalled) << r->exit_code.value_or(-1);
    EXPECT_FALSE(v.retryable);
    EXPECT_FALSE(v.pruned_at_bound);
  }
  EXPECT_EQ(DecideAttempt(obeyed).message, obeyed.prune_reason);
  EXPECT_EQ(DecideAttempt(killed).message, killed.prune_reason);
}

TEST(AttemptVerdictTest, RulesHoldForEveryCombination) {
  const std::vector<std::optional<int>> codes = {std::nullopt, 0, 1, 2, 3, 4, 5, 6, 7, 137};
  const std::vector<std::string> ends = {"", "completed", "target_reached", "pruned", "garbage"};
  int checked = 0;
  for (const auto& code : codes) {
    for (const auto& signal : {std::optional<int>(), std::optional<int>(9)}) {
      for (const auto& end : ends) {
        for (int flags = 0; flags < 32; ++flags) {
          AttemptReport r;
          r.exit_code = code;
          r.signal = code ? std::nullopt : signal;
          r.saw_end = !end.empty();
          r.end_outcome = end;
          r.timed_out = flags & 1;
          r.stop_after_end = flags & 2;
          r.stopping = flags & 4;
          r.prune_sent = flags & 8;
          r.unrunnable = flags & 16;
          const AttemptVerdict v = DecideAttempt(r);
          SCOPED_TRACE(::testing::Message() << "code " << (code ? *code : -1) << " end '" << end
                                          << "' flags " << flags);
          ++checked;
          const bool final_code = code && (*code == 0 || (*code >= 3 && *code <= 6));
          const bool readable_end = end != "" && end != "garbage";
          // A protocol exit with its end line is that outcome; otherwise a readable end line's
          // outcome wins over whatever came after it.
          if (final_code && r.saw_end) {
            EXPECT_EQ(v.state, *code == 0   ? RunState::kCompleted
                               : *code == 3 ? RunState::kTargetReached
                               : *code == 4 ? RunState::kDiverged
                               : *code == 5 ? RunState::kBudgetExhausted
                                            : RunState::kPruned);
          } else if (readable_end) {
            EXPECT_EQ(results::RunStateName(v.state), end);
          }
          // Only failures and timeouts are ever retried.
          if (v.retryable) {
            EXPECT_TRUE(v.state == RunState::kFailed || v.state == RunState::kTimedOut);
          }
          // Preempted means exit 7, resumed now, and nothing else.
          EXPECT_EQ(v.preempted, v.state == RunState::kPending);
          if (v.preempted) {
            EXPECT_EQ(code, 7);
            EXPECT_FALSE(r.stopping || r.prune_sent || r.timed_out || readable_end);
          }
          // Without an end line, pruning and a stop request are never failures.
          if (end.empty()) {
            if (r.prune_sent) {
              EXPECT_EQ(v.state, RunState::kPruned);
            }
            if (!r.prune_sent && r.stopping) {
              EXPECT_EQ(v.state, RunState::kCancelled);
            }
          }
          // The code recorded is the exit code, or 128 + the signal.
          if (code) {
            EXPECT_EQ(v.code, code);
          }
          if (!code && r.signal) {
            EXPECT_EQ(v.code, 128 + *r.signal);
          }
          // Every verdict says why, except a clean protocol exit.
          if (v.message.empty()) {
            EXPECT_TRUE(final_code && r.saw_end);
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 10 * 2 * 5 * 32);
}

}  // namespace
}  // namespace batchlab::orchestrator
