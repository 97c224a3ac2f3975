// Test data with closed-form answers for the analysis estimators.
//
// Noisy quadratic model (Zhang, Li, Nado, Martens, Sachdeva, Dahl, Shallue & Grosse 2019, "Which
// Algorithmic Choices Matter at Which Batch Sizes?", NeurIPS, §2): loss ½ xᵀHx with
// H = diag(1/i), i = 1..d, and per-example gradient noise of covariance c·H. At parameters
// x ~ N(0, I) the true gradient is G = Hx, so E|G|² = Σ h_i² and tr Σ = c Σ h_i, and
//   B_simple = c Σ h_i / Σ h_i².
//
//   NoisyQuadratic nqm(/*dims=*/100, /*noise=*/100.0, /*seed=*/7);
//   GnsSample s = nqm.Sample(step, /*b_small=*/64, /*parts=*/4);  // 4 ranks of 64 -> B_big 256
//   double truth = nqm.TrueBSimple();
#ifndef BATCHLAB_TESTS_ANALYSIS_NOISY_QUADRATIC_H_
#define BATCHLAB_TESTS_ANALYSIS_NOISY_QUADRATIC_H_

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "analysis/estimators/gradient_noise.h"

namespace batchlab::analysis::testing {

class NoisyQuadratic {
 public:
  NoisyQuadratic(int dims, double noise, uint64_t seed) : noise_(noise), rng_(seed) {
    for (int i = 1; i <= dims; ++i) h_.push_back(1.0 / i);
  }

  double TrueTrace() const {
    double s = 0;
    for (double h : h_) s += noise_ * h;
    return s;
  }
  double TrueG2() const {
    double s = 0;
    for (double h : h_) s += h * h;
    return s;
  }
  double TrueBSimple() const { return TrueTrace() / TrueG2(); }

  // One measured step: `parts` gradients at batch `b_small` (ranks or micro-batches) at fresh
  // parameters x ~ N(0, I); the big gradient is their mean, at batch parts × b_small. A batch-B
  // mean of per-example gradients is G + N(0, cH/B), drawn directly.
  GnsSample Sample(int64_t step, double b_small, int parts) {
    const size_t d = h_.size();
    std::vector<double> big(d, 0.0);
    double sq_small = 0;
    std::vector<double> g(d);
    std::vector<double> grad(d);
    for (size_t i = 0; i < d; ++i) grad[i] = h_[i] * normal_(rng_);
    for (int p = 0; p < parts; ++p) {
      double sq = 0;
      for (size_t i = 0; i < d; ++i) {
        g[i] = grad[i] + std::sqrt(noise_ * h_[i] / b_small) * normal_(rng_);
        sq += g[i] * g[i];
        big[i] += g[i] / parts;
      }
      sq_small += sq / parts;
    }
    double sq_big = 0;
    for (double v : big) sq_big += v * v;
    return {step, b_small, b_small * parts, sq_small, sq_big};
  }

 private:
  std::vector<double> h_;
  double noise_;
  std::mt19937_64 rng_;
  std::normal_distribution<double> normal_{0.0, 1.0};
};

}  // namespace batchlab::analysis::testing

#endif  // BATCHLAB_TESTS_ANALYSIS_NOISY_QUADRATIC_H_
