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
#ifndef BATCHLAB_TESTS_SUPPORT_NOISY_QUADRATIC_H_
#define BATCHLAB_TESTS_SUPPORT_NOISY_QUADRATIC_H_

#include <cmath>
#include <algorithm>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "analysis/estimators/critical_batch_branched.h"
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

// Branch runs on the same model (tests/analysis/estimators/critical_batch_branched_test.cc), with
// h_i = 1/i, i = 1..d: a trunk at batch B0 and LR η0; from its state x0, branches at k·B0 with
// LR k·η0 (the linear rule) each train Δ samples. SGD at batch B and LR η from x gives, in
// expectation, E[x_i²] ← (1 − η h_i)² E[x_i²] + η² c h_i / B per step: the expected loss of any
// branch is closed form.
//
// Paired noise: each example carries a fixed noise vector ξ_e ~ N(0, cH) (the NQM's per-example
// gradient is H x + ξ_e), and one seed reads the same examples in the same order at every k, as
// the runner's branches do (docs/protocol.md, "Branch runs"): branch k's step j averages
// the noise of chunks jk … jk+k−1 of B0 examples. Unpaired: a fresh draw every step (the test
// before issue 34). Both give every branch the same distribution, so the same truth.
class NqmBranches {
 public:
  struct Config {
    int dims = 100;
    double noise = 50.0;   // c
    double lr0 = 0.04;     // η at B0
    int64_t b0 = 8;
    int64_t delta = 8 * 64;  // samples per branch
    int evals = 3;           // the last steps' losses kept per branch
    std::vector<double> ks = {1, 2, 4, 8, 16, 32, 64};
    bool paired = true;
  };
  explicit NqmBranches(Config c) : c_(std::move(c)) {
    for (int i = 1; i <= c_.dims; ++i) h_.push_back(1.0 / i);
  }
  const Config& config() const { return c_; }

  // The trunk's state after `steps` steps at B0 from x ~ N(0, 4 I).
  std::vector<double> Trunk(int64_t steps, uint64_t seed) const {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> normal(0.0, 2.0), unit(0.0, 1.0);
    std::vector<double> x(h_.size());
    for (double& v : x) v = normal(rng);
    for (int64_t s = 0; s < steps; ++s) {
      for (size_t i = 0; i < h_.size(); ++i) {
        x[i] -= c_.lr0 * (h_[i] * x[i] + std::sqrt(c_.noise * h_[i] / c_.b0) * unit(rng));
      }
    }
    return x;
  }

  // The mean of the expected losses at the last `evals` steps of a branch at k from x0.
  double ExpectedSmoothedLoss(const std::vector<double>& x0, double k) const {
    const double lr = c_.lr0 * k, batch = k * c_.b0;
    const int steps = Steps(k);
    std::vector<double> m(h_.size());
    for (size_t i = 0; i < h_.size(); ++i) m[i] = x0[i] * x0[i];
    double sum = 0;
    int n = 0;
    for (int s = 1; s <= steps; ++s) {
      double loss = 0;
      for (size_t i = 0; i < h_.size(); ++i) {
        m[i] = (1 - lr * h_[i]) * (1 - lr * h_[i]) * m[i] + lr * lr * c_.noise * h_[i] / batch;
        loss += 0.5 * h_[i] * m[i];
      }
      if (s > steps - std::min(c_.evals, steps)) {
        sum += loss;
        ++n;
      }
    }
    return sum / n;
  }

  // The true crossing of `tol` (a batch size): the expected gaps on the grid, linear in log k as
  // the estimator interpolates; +inf when no k's expected gap exceeds it.
  double TrueCrossing(const std::vector<double>& x0, double tol) const {
    std::vector<double> gaps;
    const double base = ExpectedSmoothedLoss(x0, c_.ks[0]);
    for (double k : c_.ks) gaps.push_back(ExpectedSmoothedLoss(x0, k) - base);
    for (size_t i = 1; i < c_.ks.size(); ++i) {
      if (gaps[i] > tol) {
        const double t = (tol - gaps[i - 1]) / (gaps[i] - gaps[i - 1]);
        const double lk = std::log(c_.ks[i - 1]) + t * (std::log(c_.ks[i]) - std::log(c_.ks[i - 1]));
        return static_cast<double>(c_.b0) * std::exp(lk);
      }
    }
    return INFINITY;
  }

  // The branches of one point: `seeds` runs per k from x0.
  BranchPointData Simulate(const std::vector<double>& x0, int64_t at_step, int seeds,
                           uint64_t seed) const {
    BranchPointData p;
    p.trunk_id = "trunk";
    p.at_step = at_step;
    p.at_samples = at_step * c_.b0;
    p.trunk_batch = c_.b0;
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> unit(0.0, 1.0);
    const size_t d = h_.size();
    const int64_t chunks = c_.delta / c_.b0;
    std::vector<double> xi(static_cast<size_t>(chunks) * d), x(d), g(d);
    for (int s = 0; s < seeds; ++s) {
      if (c_.paired) {  // this seed's examples: chunk t's mean noise ~ N(0, cH/B0)
        for (int64_t t = 0; t < chunks; ++t) {
          for (size_t i = 0; i < d; ++i) {
            xi[t * d + i] = std::sqrt(c_.noise * h_[i] / c_.b0) * unit(rng);
          }
        }
      }
      for (double k : c_.ks) {
        x = x0;
        const int steps = Steps(k);
        const auto kk = static_cast<int64_t>(k);
        BranchRun run;
        run.multiplier = k;
        run.seed = s;
        for (int j = 0; j < steps; ++j) {
          for (size_t i = 0; i < d; ++i) {
            if (c_.paired) {
              double sum = 0;
              for (int64_t t = j * kk; t < (j + 1) * kk; ++t) sum += xi[t * d + i];
              g[i] = sum / k;
            } else {
              g[i] = std::sqrt(c_.noise * h_[i] / (k * c_.b0)) * unit(rng);
            }
          }
          double loss = 0;
          for (size_t i = 0; i < d; ++i) {
            x[i] -= c_.lr0 * k * (h_[i] * x[i] + g[i]);
            loss += 0.5 * h_[i] * x[i] * x[i];
          }
          if (j + 1 > steps - std::min(c_.evals, steps)) run.last_values.push_back(loss);
        }
        p.runs.push_back(std::move(run));
      }
    }
    return p;
  }

 private:
  int Steps(double k) const {
    return static_cast<int>(c_.delta / static_cast<int64_t>(k * static_cast<double>(c_.b0)));
  }
  Config c_;
  std::vector<double> h_;
};

}  // namespace batchlab::analysis::testing

#endif  // BATCHLAB_TESTS_SUPPORT_NOISY_QUADRATIC_H_
