// Live progress from a sweep snapshot: a run's total steps from its budget, its ETA from elapsed
// time and step, elapsed never negative (the old "for -0 s"), the sweep's ETA, the fingerprint,
// the text table and JSON; and the per-run block under ProgressPrinter's live line.
#include "orchestrator/execute/live_progress.h"

#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "orchestrator/execute/progress.h"

namespace batchlab::orchestrator {
namespace {

using nlohmann::json;

results::RunSnapshot Snap(const std::string& id, const std::string& state, const json& config) {
  results::RunSnapshot r;
  r.id = id;
  r.state = state;
  r.attempt = state == "pending" ? 0 : 1;
  r.config_json = config.dump();
  r.batch_size = config.value("batch_size", 0);
  r.params = "batch_size=" + std::to_string(r.batch_size);
  return r;
}

TEST(BudgetStepsTest, FromStepsSamplesOrEpochsOfAKnownDataset) {
  EXPECT_EQ(BudgetSteps({{"batch_size", 64}, {"budget", {{"steps", 500}}}}), 500);
  EXPECT_EQ(BudgetSteps({{"batch_size", 64}, {"budget", {{"samples", 6400}}}}), 100);
  EXPECT_EQ(
      BudgetSteps(
          {{"batch_size", 64}, {"budget", {{"epochs", 1}}}, {"data", {{"name", "fashion-mnist"}}}}),
      937);  // the runner's count: floor(60000 / 64) full batches (base/run_values.h)
  EXPECT_EQ(BudgetSteps({{"batch_size", 100},
                         {"budget", {{"epochs", 2}}},
                         {"data", {{"name", "fashion-mnist"}, {"samples", 1000}}}}),
            20);
  // The first limit reached ends the run.
  EXPECT_EQ(BudgetSteps({{"batch_size", 10}, {"budget", {{"steps", 50}, {"samples", 200}}}}), 20);
  EXPECT_EQ(BudgetSteps({{"batch_size", 64}, {"budget", {{"seconds", 30}}}}), std::nullopt);
  EXPECT_EQ(BudgetSteps(json::object()), std::nullopt);
}

TEST(BudgetStepsTest, CountsTheSyncModesStepsAndTheBatchSchedule) {
  // async_ps on 3 ranks: a step is one worker's local batch of 63 / 3 = 21 samples.
  EXPECT_EQ(BudgetSteps({{"batch_size", 63},
                         {"world_size", 3},
                         {"comm", {{"sync", "async_ps"}}},
                         {"budget", {{"samples", 2100}}}}),
            100);
  // 64 until 640 samples (10 steps), then 256: 1664 samples are 4 more steps.
  EXPECT_EQ(BudgetSteps({{"batch_size", 64},
                         {"batch_schedule", {{"at_samples", {640}}, {"batch_sizes", {256}}}},
                         {"budget", {{"samples", 1664}}}}),
            14);
}

TEST(FormatDurationTest, MinutesSecondsHoursAndNeverNegative) {
  EXPECT_EQ(FormatDuration(42.4), "0:42");
  EXPECT_EQ(FormatDuration(725), "12:05");
  EXPECT_EQ(FormatDuration(2 * 3600 + 3 * 60 + 10), "2h03");
  EXPECT_EQ(FormatDuration(-0.3), "0:00");
}

TEST(LiveProgressTest, RunEtaFromStepAndBudgetAndSweepEta) {
  const double now = 1000;
  results::SweepSnapshot snap;
  snap.name = "s";
  snap.version = 2;
  snap.lines_ingested = 77;
  results::RunSnapshot a = Snap("a", "running", {{"batch_size", 64}, {"budget", {{"steps", 100}}}});
  a.started_at = now - 10;
  a.step = 25;
  a.loss = 0.5;
  a.last_eval = results::EvalSnapshot{20, {{"test_accuracy", 0.75}}};
  results::RunSnapshot b =
      Snap("b", "completed", {{"batch_size", 64}, {"budget", {{"steps", 100}}}});
  b.started_at = now - 100;
  b.ended_at = now - 60;  // 40 s
  results::RunSnapshot c =
      Snap("c", "pending", {{"batch_size", 128}, {"budget", {{"steps", 100}}}});
  // Started a moment "after" now (clocks of two processes): elapsed is 0, never -0.3.
  results::RunSnapshot d =
      Snap("d", "running", {{"batch_size", 128}, {"budget", {{"seconds", 30}}}});
  d.started_at = now + 0.3;
  snap.runs = {a, b, c, d};

  LiveProgress live = ComputeLiveProgress(snap, now);
  ASSERT_EQ(live.runs.size(), 4u);
  EXPECT_EQ(live.runs[0].total_steps, 100);
  EXPECT_DOUBLE_EQ(live.runs[0].elapsed_seconds, 10);
  ASSERT_TRUE(live.runs[0].eta_seconds);
  EXPECT_DOUBLE_EQ(*live.runs[0].eta_seconds, 30);  // 10 s for 25 steps, 75 to go
  EXPECT_DOUBLE_EQ(live.runs[1].elapsed_seconds, 40);
  EXPECT_FALSE(live.runs[1].eta_seconds);
  EXPECT_DOUBLE_EQ(live.runs[3].elapsed_seconds, 0);
  ASSERT_TRUE(live.runs[3].eta_seconds);
  EXPECT_DOUBLE_EQ(*live.runs[3].eta_seconds, 30);  // what is left of a seconds budget
  // Longest running ETA (30) + 1 waiting run × mean finished duration (40) / 2 running.
  ASSERT_TRUE(live.eta_seconds);
  EXPECT_DOUBLE_EQ(*live.eta_seconds, 30 + 40.0 / 2);
  EXPECT_EQ(live.counts.at("running"), 2);
  EXPECT_EQ(live.total, 4);

  const std::string text = FormatLiveProgress(live, /*all_runs=*/false);
  EXPECT_NE(text.find("4 runs: 1 completed, 1 pending, 2 running | ETA 0:50"), std::string::npos)
      << text;
  EXPECT_NE(text.find("25/100"), std::string::npos) << text;
  EXPECT_NE(text.find("test_accuracy=0.75 @20"), std::string::npos) << text;
  EXPECT_EQ(text.find("-0"), std::string::npos) << text;
  EXPECT_EQ(text.find("  b  "), std::string::npos) << "finished runs only with --all:\n" << text;
  EXPECT_NE(FormatLiveProgress(live, true).find("completed"), std::string::npos);

  const json j = LiveProgressJson(live);
  EXPECT_EQ(j["runs"][0]["step"], 25);
  EXPECT_EQ(j["runs"][0]["total_steps"], 100);
  EXPECT_EQ(j["runs"][0]["last_eval"]["values"]["test_accuracy"], 0.75);
  EXPECT_TRUE(j["runs"][2]["step"].is_null());
  EXPECT_EQ(j["eta_seconds"], 50);

  // The fingerprint moves when metrics arrive and when a state changes, not otherwise.
  EXPECT_EQ(ComputeLiveProgress(snap, now + 5).fingerprint, live.fingerprint);
  snap.lines_ingested = 78;
  const std::string more = ComputeLiveProgress(snap, now).fingerprint;
  EXPECT_NE(more, live.fingerprint);
  snap.runs[2].state = "running";
  EXPECT_NE(ComputeLiveProgress(snap, now).fingerprint, more);
}

TEST(LiveProgressTest, ARunThatJustEndedStaysInTheViewWithItsFinalNumbers) {
  // A run shorter than a refresh was never in the default view with its numbers: it is shown
  // for kRecentlyEndedSeconds after its end, then only with --all.
  results::SweepSnapshot snap;
  snap.name = "s";
  results::RunSnapshot r = Snap("3f2a9c0d11e4b7a2", "completed", {{"batch_size", 64}, {"budget", {{"steps", 5}}}});
  r.started_at = 100;
  r.ended_at = 101.5;
  r.step = 5;
  r.loss = 0.25;
  r.last_eval = results::EvalSnapshot{5, {{"test_accuracy", 0.5}}};
  snap.runs = {r};
  const std::string recent = FormatLiveProgress(ComputeLiveProgress(snap, 104), false);
  EXPECT_NE(recent.find("3f2a9c0d11e4b7a2  completed"), std::string::npos) << recent;
  EXPECT_NE(recent.find("5/5"), std::string::npos) << recent;
  EXPECT_NE(recent.find("0.25"), std::string::npos) << recent;
  EXPECT_NE(recent.find("test_accuracy=0.5 @5"), std::string::npos) << recent;
  const std::string later =
      FormatLiveProgress(ComputeLiveProgress(snap, 101.5 + kRecentlyEndedSeconds + 1), false);
  EXPECT_EQ(later.find("3f2a9c0d11e4b7a2"), std::string::npos) << later;
}

TEST(LiveProgressTest, EveryRunFinishedMeansNothingLeft) {
  results::SweepSnapshot snap;
  snap.runs = {Snap("a", "completed", {{"batch_size", 64}}),
               Snap("b", "failed", {{"batch_size", 64}})};
  LiveProgress live = ComputeLiveProgress(snap, 0);
  ASSERT_TRUE(live.eta_seconds);
  EXPECT_EQ(*live.eta_seconds, 0);
}

TEST(LiveProgressTest, NoEtaWhileNothingRuns) {
  // A stopped sweep: one run finished in 40 s, one cancelled, one waiting, none running. Nothing
  // advances the waiting run, so there is no ETA (it was "0:40", as if the sweep were moving).
  results::SweepSnapshot snap;
  snap.name = "s";
  snap.runs = {Snap("a", "completed", {{"batch_size", 64}}),
               Snap("b", "cancelled", {{"batch_size", 64}}),
               Snap("c", "pending", {{"batch_size", 64}})};
  snap.runs[0].started_at = 100;
  snap.runs[0].ended_at = 140;
  const LiveProgress live = ComputeLiveProgress(snap, 1000);
  EXPECT_FALSE(live.eta_seconds);
  const std::string text = FormatLiveProgress(live, false);
  EXPECT_NE(text.find("3 runs: 1 cancelled, 1 completed, 1 pending | ETA - (nothing running"),
            std::string::npos)
      << text;
  snap.runs.resize(1);
  EXPECT_NE(FormatLiveProgress(ComputeLiveProgress(snap, 1000), false).find("1 run: 1 completed"),
            std::string::npos);
}

TEST(ProgressPrinterTest, LiveLineCarriesThePerRunBlockAndRedrawsItInPlace) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  {
    ProgressPrinter p(out, /*live=*/true, "s");
    int calls = 0;
    p.SetDetail([&calls] {
      ++calls;
      return "  run  state  step\n  abc  running  " + std::to_string(calls) + "/10\n";
    });
    ProgressCounts c;
    c.total = 2;
    c.running = 1;
    c.waiting = 1;
    p.Update(c, 0.0);
    p.Update(c, 0.5);  // detail is refreshed at most once a second
    p.Update(c, 1.2);
    EXPECT_EQ(calls, 2);
    c.running = 0;
    c.done = 2;
    c.waiting = 0;
    p.Update(c, 2.5);
  }
  std::rewind(out);
  std::string text;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, out)) > 0;) text.append(buf, n);
  std::fclose(out);
  EXPECT_NE(text.find("[s] 0/2 done, 1 running"), std::string::npos) << text;
  EXPECT_NE(text.find("abc  running  1/10"), std::string::npos) << text;
  EXPECT_NE(text.find("abc  running  2/10"), std::string::npos) << text;
  EXPECT_NE(text.find("\033[2A\r\033[J"), std::string::npos) << "the 3-line block is erased";
  // Once nothing runs, the final line stands alone.
  const std::string tail = text.substr(text.rfind("\r\033[J"));
  EXPECT_NE(tail.find("2/2 done, 0 running"), std::string::npos) << tail;
  EXPECT_EQ(tail.find("abc"), std::string::npos) << tail;
}

}  // namespace
}  // namespace batchlab::orchestrator
