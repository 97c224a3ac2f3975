// A study whose best LR per batch size is planted (tests of analysis/estimators/lr_law.h):
// steps to the target S(B, η) = S(B)·(1 + a·ln²(η/η*(B))), a parabola in log η with its vertex
// at the planted η*(B), times seed noise (1 + noise·z), rounded up to whole steps;
// S(B) = 200(1 + 200/B) (McCandlish et al. 2018's form). The LR grid is 0.005·√2^j, j = 0..14
// (0.005 … 0.64), the same at every batch size.
//
//   std::vector<LrTrial> t = PlantedLrTrials([](double b) { return 0.02 * std::sqrt(b / 32); },
//                                            {32, 64, 128}, /*seeds=*/3, /*noise=*/0.03, 7);
#ifndef BATCHLAB_TESTS_ANALYSIS_ESTIMATORS_PLANTED_LR_H_
#define BATCHLAB_TESTS_ANALYSIS_ESTIMATORS_PLANTED_LR_H_

#include <cmath>
#include <cstdint>
#include <functional>
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

}  // namespace batchlab::analysis::testing

#endif  // BATCHLAB_TESTS_ANALYSIS_ESTIMATORS_PLANTED_LR_H_
