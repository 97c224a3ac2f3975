// Exact pruning (orchestrator/plan/pruning.h): the rule's cases by hand, and the claim itself — on
// hundreds of random studies played out on a simulated slot pool, the analysis's own
// BestPerBatchSize and FitCriticalBatch give the identical best-steps table, S_min, E_min and
// B_crit (values and intervals) with and without pruning, while pruning saves steps.
#include "orchestrator/plan/pruning.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "analysis/estimators/critical_batch_fit.h"
#include "analysis/estimators/steps_to_target.h"

namespace batchlab::orchestrator {
namespace {

TEST(PruneBookTest, ARunPastTheBestStepsIsPrunedButATieIsNot) {
  PruneBook book;
  book.Add("B=64", "lr=0.1", "fast");
  book.Add("B=64", "lr=0.3", "slow");
  book.Add("B=128", "lr=0.3", "other-batch");
  book.SetReached(0, 100);
  book.SetRunning(1, 99);  // logged at 99 without the target: it may still hit at 100 (a tie)
  EXPECT_FALSE(book.WhyPrune(1));
  book.SetRunning(1, 100);  // not at 100: at least 101 > 100
  ASSERT_TRUE(book.WhyPrune(1));
  EXPECT_NE(book.WhyPrune(1)->find("100 steps of lr=0.1"), std::string::npos) << *book.WhyPrune(1);
  book.SetRunning(2, 5000);  // another batch size is never compared
  EXPECT_FALSE(book.WhyPrune(2));
  EXPECT_FALSE(book.WhyPrune(0));  // reached runs are never pruned
}

TEST(PruneBookTest, SeedsCountAsTheAnalysisMeansThem) {
  PruneBook book;
  book.Add("B", "best", "b1");
  book.Add("B", "best", "b2");
  book.Add("B", "c", "c1");
  book.Add("B", "c", "c2");
  book.SetReached(0, 100);
  book.SetReached(1, 200);  // mean 150
  book.SetReached(2, 120);
  book.SetRunning(3, 150);  // bound (120 + 151) / 2 = 135.5 < 150: could still win
  EXPECT_FALSE(book.WhyPrune(3));
  book.SetRunning(3, 180);  // (120 + 181) / 2 = 150.5 > 150
  EXPECT_TRUE(book.WhyPrune(3));
  // A configuration whose seeds have not all reached the target sets no bar.
  PruneBook partial;
  partial.Add("B", "best", "b1");
  partial.Add("B", "best", "b2");
  partial.Add("B", "c", "c1");
  partial.SetReached(0, 10);
  partial.SetRunning(2, 1000);
  EXPECT_FALSE(partial.WhyPrune(2));
}

// StopFromStep is the bound at which WhyPrune starts to prune, counting unfinished seeds as 0.
TEST(PruneBookTest, StopFromStepIsTheFirstBoundWhyPruneAccepts) {
  PruneBook book;
  book.Add("B", "best", "b1");
  book.Add("B", "best", "b2");
  book.Add("B", "c", "c1");
  book.Add("B", "c", "c2");
  book.Add("B", "d", "d1");
  book.Add("B", "d", "d2");
  EXPECT_FALSE(book.StopFromStep(2));  // no bar yet
  book.SetReached(0, 100);
  EXPECT_FALSE(book.StopFromStep(2));  // "best" has a seed still out
  book.SetReached(1, 200);             // bar: mean 150
  // c2 not started: (0 + b) / 2 > 150 from b = 301.
  ASSERT_EQ(book.StopFromStep(2), 301);
  book.SetRunning(2, 299);
  EXPECT_FALSE(book.WhyPrune(2));
  book.SetRunning(2, 300);
  EXPECT_TRUE(book.WhyPrune(2));
  // c1 reached at 120: (120 + b) / 2 > 150 from b = 181, for c2 now.
  book.SetReached(2, 120);
  ASSERT_EQ(book.StopFromStep(3), 181);
  book.SetRunning(3, 179);
  EXPECT_FALSE(book.WhyPrune(3));
  book.SetRunning(3, 180);
  EXPECT_TRUE(book.WhyPrune(3));
  EXPECT_FALSE(book.StopFromStep(0));  // reached runs are never pruned
  // A fractional bar: "c" at (120 + 131) / 2 = 125.5 once c2 reaches; d1 alone: b / 2 > 125.5.
  book.SetReached(3, 131);
  EXPECT_EQ(book.StopFromStep(4), 252);
  // The value only falls as results come in.
  book.SetReached(5, 100);
  EXPECT_EQ(book.StopFromStep(4), 152);  // (100 + b) / 2 > 125.5
}

TEST(PruneBookTest, ASeedThatMissedTheTargetRulesOutItsConfiguration) {
  PruneBook book;
  book.Add("B", "c", "c1");
  book.Add("B", "c", "c2");
  book.Add("B", "", "no-group-key");
  book.Add("", "c", "no-target");
  book.SetOut(0);
  ASSERT_TRUE(book.WhyPrune(1));  // waiting or running alike
  EXPECT_NE(book.WhyPrune(1)->find("run c1"), std::string::npos);
  EXPECT_FALSE(book.WhyPrune(2));
  book.SetOut(3);
  EXPECT_FALSE(book.WhyPrune(3));  // no group: never pruned
}

TEST(PruneBookTest, ABarExistsOnceAnotherConfigurationHasEverySeedAtTheTarget) {
  PruneBook book;
  book.Add("B", "a", "a1");
  book.Add("B", "a", "a2");
  book.Add("B", "b", "b1");
  book.Add("C", "c", "c1");
  book.Add("", "d", "no-target");
  EXPECT_FALSE(book.HasBar(2));
  book.SetReached(0, 50);
  EXPECT_FALSE(book.HasBar(2));  // a2 has not reached it yet: no bar
  book.SetReached(1, 70);
  EXPECT_TRUE(book.HasBar(2));
  EXPECT_FALSE(book.HasBar(0));  // reached runs have nothing left to prune
  EXPECT_FALSE(book.HasBar(3));  // another batch size's group
  EXPECT_FALSE(book.HasBar(4));  // no group: never pruned
}

TEST(PruneBookTest, ARunWouldStartBlindWhileItsGroupRunsWithoutABar) {
  PruneBook book;
  book.Add("B", "a", "a1");
  book.Add("B", "b", "b1");
  book.Add("B", "c", "c1");
  book.Add("C", "d", "d1");
  book.Add("", "e", "no-target");
  EXPECT_FALSE(book.WouldStartBlind(1));  // nothing of its group in flight
  book.SetRunning(0, -1);
  EXPECT_TRUE(book.WouldStartBlind(1));
  EXPECT_FALSE(book.WouldStartBlind(3));  // another group
  EXPECT_FALSE(book.WouldStartBlind(4));  // no group
  EXPECT_TRUE(book.SameGroup(1, 2));
  EXPECT_FALSE(book.SameGroup(1, 3));
  book.SetReached(0, 40);
  EXPECT_FALSE(book.WouldStartBlind(1));  // a bar now: started, it can be stopped at 40
}

// ---- The claim, on random studies. ----

struct SimRun {
  int64_t batch = 0;
  int config = 0;
  int seed = 0;
  int64_t hit = 0;  // the step it meets the target (0: never)
  int64_t end = 0;  // the step it ends without it (budget or divergence)
  bool diverges = false;
};

struct Study {
  std::vector<SimRun> runs;
  int eval_every = 1;
  std::string Group(const SimRun& r) const { return fmt::format("B={}", r.batch); }
  std::string Config(const SimRun& r) const { return fmt::format("lr={}", r.config); }
};

Study RandomStudy(std::mt19937_64& rng) {
  Study s;
  std::uniform_int_distribution<int> n_configs(1, 5), n_seeds(1, 3), eval(1, 5);
  std::uniform_real_distribution<double> u(0, 1);
  const int configs = n_configs(rng), seeds = n_seeds(rng);
  s.eval_every = eval(rng);
  const double s_min = 20 + 40 * u(rng), b_noise = 100 + 400 * u(rng);
  for (int64_t b : {32, 64, 128, 256, 512}) {
    for (int c = 0; c < configs; ++c) {
      const double penalty = 1 + 1.5 * u(rng);  // how far this LR is from the best
      for (int k = 0; k < seeds; ++k) {
        SimRun r{b, c, k + 1, 0, 0, false};
        const double steps =
            s_min * (1 + b_noise / static_cast<double>(b)) * penalty * (0.9 + 0.2 * u(rng));
        const int64_t budget = 600;
        const double fate = u(rng);
        if (fate < 0.15) {
          r.end = budget;  // never reaches it
        } else if (fate < 0.22) {
          r.diverges = true;
          r.end = 1 + static_cast<int64_t>(u(rng) * 50);
        } else {
          // The target is met at an evaluation (steps resolved to eval.every_steps).
          int64_t h = std::max<int64_t>(1, static_cast<int64_t>(steps));
          h = ((h + s.eval_every - 1) / s.eval_every) * s.eval_every;
          if (h > budget) {
            r.end = budget;
          } else {
            r.hit = h;
          }
        }
        s.runs.push_back(r);
      }
    }
  }
  return s;
}

struct Played {
  std::vector<analysis::TargetHit> hits;
  int64_t steps_trained = 0;
  int pruned = 0;
};

// Plays the study on `slots` slots, one step per tick per running run, in `order` (first seeds
// first when `seed_first`). With pruning, the book sees what was logged up to a random lag
// (ingest runs every second), and a run asked to stop goes on for a random 0-3 more steps (it
// may meet the target meanwhile: then it counts as reached, as in the orchestrator).
Played Play(const Study& s, bool prune, int slots, std::mt19937_64& rng) {
  const size_t n = s.runs.size();
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return s.runs[a].seed < s.runs[b].seed; });
  std::deque<size_t> queue(order.begin(), order.end());
  PruneBook book;
  for (const SimRun& r : s.runs)
    book.Add(s.Group(r), s.Config(r), fmt::format("{}", &r - &s.runs[0]));

  enum State { kWaiting, kRunning, kDone };
  std::vector<State> state(n, kWaiting);
  std::vector<int64_t> step(n, 0), stop_at(n, -1), seen(n, 0);
  std::vector<analysis::HitStatus> status(n, analysis::HitStatus::kUnfinished);
  std::uniform_int_distribution<int> lag(0, 3), more(0, 3);
  Played out;
  int running = 0;
  auto logged_bound = [&](int64_t upto) {  // the last eval logged at or before `upto`
    return (upto / s.eval_every) * s.eval_every;
  };
  while (!queue.empty() || running > 0) {
    while (running < slots && !queue.empty()) {
      const size_t i = queue.front();
      queue.pop_front();
      if (prune && book.WhyPrune(i)) {
        state[i] = kDone;
        status[i] = analysis::HitStatus::kPruned;
        book.SetOut(i);
        ++out.pruned;
        continue;
      }
      state[i] = kRunning;
      ++running;
      if (prune) book.SetRunning(i, -1);
    }
    for (size_t i = 0; i < n; ++i) {
      if (state[i] != kRunning) continue;
      const SimRun& r = s.runs[i];
      ++step[i];
      ++out.steps_trained;
      auto finish = [&](analysis::HitStatus st) {
        state[i] = kDone;
        status[i] = st;
        --running;
        if (!prune) return;
        if (st == analysis::HitStatus::kReached) {
          book.SetReached(i, r.hit);
        } else {
          book.SetOut(i);
        }
      };
      if (r.hit > 0 && step[i] == r.hit) {
        finish(analysis::HitStatus::kReached);
      } else if (r.hit == 0 && step[i] == r.end) {
        finish(r.diverges ? analysis::HitStatus::kDiverged : analysis::HitStatus::kNeverReached);
      } else if (stop_at[i] >= 0 && step[i] >= stop_at[i]) {
        ++out.pruned;
        finish(analysis::HitStatus::kPruned);
      }
    }
    if (!prune) continue;
    for (size_t i = 0; i < n; ++i) {
      if (state[i] != kRunning) continue;
      // Ingest lags: the book learns of the steps logged up to a few ticks ago.
      seen[i] = std::max(seen[i], step[i] - lag(rng));
      if (seen[i] >= s.eval_every) book.SetRunning(i, logged_bound(seen[i]));
      if (stop_at[i] < 0 && book.WhyPrune(i)) stop_at[i] = step[i] + more(rng);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const SimRun& r = s.runs[i];
    analysis::TargetHit h;
    h.run_id = fmt::format("run{:03}", i);
    h.config_key = s.Config(r);
    h.batch_size = r.batch;
    h.seed = r.seed;
    h.status = status[i];
    if (h.status == analysis::HitStatus::kReached) {
      h.step = r.hit;
      h.samples = static_cast<double>(r.hit * r.batch);
    }
    out.hits.push_back(h);
  }
  return out;
}

TEST(PruningClaimTest, RandomStudiesGiveTheSameBestStepsAndCriticalBatch) {
  std::mt19937_64 rng(20261123);
  int64_t full_steps = 0, pruned_steps = 0;
  int fits = 0, pruned_runs = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const Study study = RandomStudy(rng);
    const int slots = 1 + trial % 4;
    const Played full = Play(study, false, slots, rng);
    const Played pruned = Play(study, true, slots, rng);
    full_steps += full.steps_trained;
    pruned_steps += pruned.steps_trained;
    pruned_runs += pruned.pruned;
    const auto a = analysis::BestPerBatchSize(full.hits);
    const auto b = analysis::BestPerBatchSize(pruned.hits);
    ASSERT_EQ(a.size(), b.size());
    for (size_t k = 0; k < a.size(); ++k) {
      SCOPED_TRACE(fmt::format("trial {} B={}", trial, a[k].batch_size));
      ASSERT_EQ(a[k].best.has_value(), b[k].best.has_value());
      if (!a[k].best) continue;
      EXPECT_EQ(a[k].best->config_key, b[k].best->config_key);
      EXPECT_EQ(a[k].best->run_id, b[k].best->run_id);
      EXPECT_EQ(a[k].best_steps, b[k].best_steps);
      EXPECT_EQ(a[k].best_samples, b[k].best_samples);
      EXPECT_EQ(a[k].seed_steps, b[k].seed_steps);
    }
    analysis::CritOptions opt;
    opt.resamples = 200;
    auto fa = analysis::FitCriticalBatch(analysis::StepsPointsOf(a), opt);
    auto fb = analysis::FitCriticalBatch(analysis::StepsPointsOf(b), opt);
    ASSERT_EQ(fa.ok(), fb.ok()) << "trial " << trial;
    if (!fa.ok()) continue;
    ++fits;
    EXPECT_EQ(fa->s_min.value, fb->s_min.value);
    EXPECT_EQ(fa->e_min.value, fb->e_min.value);
    EXPECT_EQ(fa->b_crit.value, fb->b_crit.value);
    // The same interval, or the same reason it is unavailable (its bounds are then NaN).
    EXPECT_EQ(fa->b_crit.unavailable, fb->b_crit.unavailable);
    if (fa->b_crit.available()) {
      EXPECT_EQ(fa->b_crit.low, fb->b_crit.low);
      EXPECT_EQ(fa->b_crit.high, fb->b_crit.high);
    }
  }
  // The claim is only interesting if pruning happened and fits were compared.
  EXPECT_GT(fits, 100);
  EXPECT_GT(pruned_runs, 300);
  EXPECT_LT(pruned_steps, full_steps);
  std::printf(
      "pruning saved %.1f %% of the steps over 300 random studies (%d runs pruned)\n",
      100.0 * static_cast<double>(full_steps - pruned_steps) / static_cast<double>(full_steps),
      pruned_runs);
}

}  // namespace
}  // namespace batchlab::orchestrator
