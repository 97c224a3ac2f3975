// A study whose best LR per batch size is planted (tests of analysis/estimators/lr_law.h):
// steps to the target S(B, η) = S(B)·(1 + a·ln²(η/η*(B))), a parabola in log η with its vertex
// at the planted η*(B), times seed noise (1 + noise·z), rounded up to whole steps;
// S(B) = 200(1 + 200/B) (McCandlish et al. 2018's form). The LR grid is 0.005·√2^j, j = 0..14
// (0.005 … 0.64), the same at every batch size.
//
//   std::vector<LrTrial> t = PlantedLrTrials([](double b) { return 0.02 * std::sqrt(b / 32); },
//                                            {32, 64, 128}, /*seeds=*/3, /*noise=*/0.03, 7);
//   std::vector<LrTrial> pruned = PruneLikeASweep(t, /*eval_every=*/10);
#ifndef BATCHLAB_TESTS_ANALYSIS_ESTIMATORS_PLANTED_LR_H_
#define BATCHLAB_TESTS_ANALYSIS_ESTIMATORS_PLANTED_LR_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <vector>

#include "analysis/estimators/lr_law.h"

namespace batchlab::analysis::testing {

inline std::vector<double> PlantedLrGrid() {
  std::vector<double> g;
  for (int j = 0; j <= 14; ++j) g.push_back(0.005 * std::pow(std::sqrt(2.0), j));
  return g;
}

inline double PlantedSteps(double batch, double lr, double best_lr) {
  const double u = std::log(lr / best_lr);
  return 200 * (1 + 200 / batch) * (1 + 0.5 * u * u);
}

inline std::vector<LrTrial> PlantedLrTrials(const std::function<double(double)>& best_lr,
                                            const std::vector<int64_t>& batches, int seeds,
                                            double noise, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  std::vector<LrTrial> out;
  for (int64_t b : batches) {
    for (double lr : PlantedLrGrid()) {
      for (int s = 0; s < seeds; ++s) {
        LrTrial t;
        t.batch_size = b;
        t.lr = lr;
        t.seed = s;
        t.steps = std::ceil(PlantedSteps(static_cast<double>(b), lr, best_lr(static_cast<double>(b))) *
                            (1 + noise * z(rng)));
        out.push_back(t);
      }
    }
  }
  return out;
}

// The trials as exact pruning leaves them (docs/spec.md "Pruning", orchestrator/plan/pruning.h),
// each run evaluated every `eval_every` steps (its steps rounded up to an evaluation) and run one
// at a time in the sweep's order with pruning on: every LR's first seed, then every second seed.
// Before each evaluation short of its hit (and before it starts), a run is pruned when an LR of
// its batch size has a seed that missed, or when its LR's lower bound — Σ over the LR's seeds of
// the hit step (reached), the bound of a pruned one, the last evaluation + 1 (this run), 0 (not
// started), over the seed count — is strictly greater than the mean steps of another LR whose
// seeds all reached the target. A pruned trial is censored with that bound as its steps.
// `unpruned` (optional) receives the same runs evaluated alike without pruning.
inline std::vector<LrTrial> PruneLikeASweep(const std::vector<LrTrial>& trials, int64_t eval_every,
                                            std::vector<LrTrial>* unpruned = nullptr) {
  struct Run {
    LrTrial trial;
    int64_t hit = 0;  // the evaluation step meeting the target (0: missed)
    enum { kWaiting, kReached, kOut, kPruned } state = kWaiting;
  };
  std::vector<Run> runs;
  for (const LrTrial& t : trials) {
    Run r{t};
    if (std::isfinite(t.steps)) {
      const auto e = static_cast<int64_t>(std::ceil(t.steps / static_cast<double>(eval_every)));
      r.hit = std::max<int64_t>(1, e) * eval_every;
      r.trial.steps = static_cast<double>(r.hit);
    }
    runs.push_back(r);
  }
  if (unpruned != nullptr) {
    unpruned->clear();
    for (const Run& r : runs) unpruned->push_back(r.trial);
  }
  std::stable_sort(runs.begin(), runs.end(),
                   [](const Run& a, const Run& b) { return a.trial.seed < b.trial.seed; });
  using Key = std::pair<int64_t, double>;  // (batch size, LR): a configuration
  std::map<Key, std::vector<size_t>> configs;
  for (size_t i = 0; i < runs.size(); ++i) configs[{runs[i].trial.batch_size, runs[i].trial.lr}].push_back(i);
  // Run i's configuration's lower bound with run i at `own` steps, or nullopt if a seed missed.
  const auto lower = [&](size_t i, double own) -> std::optional<double> {
    double sum = 0;
    const std::vector<size_t>& seeds = configs[{runs[i].trial.batch_size, runs[i].trial.lr}];
    for (size_t s : seeds) {
      if (runs[s].state == Run::kOut) return std::nullopt;
      if (s == i) sum += own;
      else if (runs[s].state != Run::kWaiting) sum += runs[s].trial.steps;
    }
    return sum / static_cast<double>(seeds.size());
  };
  const auto bar = [&](size_t i) -> std::optional<double> {
    std::optional<double> best;
    for (const auto& [key, seeds] : configs) {
      if (key.first != runs[i].trial.batch_size || key.second == runs[i].trial.lr) continue;
      double sum = 0;
      bool all = true;
      for (size_t s : seeds) {
        all = all && runs[s].state == Run::kReached;
        sum += runs[s].trial.steps;
      }
      const double mean = sum / static_cast<double>(seeds.size());
      if (all && (!best || mean < *best)) best = mean;
    }
    return best;
  };
  const auto prunes = [&](size_t i, double own) {
    const std::optional<double> low = lower(i, own);
    const std::optional<double> b = bar(i);
    return !low || (b && *low > *b);
  };
  for (size_t i = 0; i < runs.size(); ++i) {
    Run& r = runs[i];
    const auto stop = [&r](double bound) {
      r.state = Run::kPruned;
      r.trial.steps = bound;
      r.trial.censored = true;
    };
    if (prunes(i, 0)) {
      stop(0);
      continue;
    }
    bool pruned = false;
    for (int64_t e = eval_every; r.hit == 0 || e < r.hit; e += eval_every) {
      if (r.hit == 0 && e > 100000) break;  // a missed run: it ran its budget out
      if (prunes(i, static_cast<double>(e + 1))) {
        stop(static_cast<double>(e + 1));
        pruned = true;
        break;
      }
    }
    if (!pruned) r.state = r.hit > 0 ? Run::kReached : Run::kOut;
  }
  std::vector<LrTrial> out;
  for (const Run& r : runs) out.push_back(r.trial);
  return out;
}

}  // namespace batchlab::analysis::testing

#endif  // BATCHLAB_TESTS_ANALYSIS_ESTIMATORS_PLANTED_LR_H_
