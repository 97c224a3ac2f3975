// Resampling and percentile intervals shared by the estimators that report a bootstrap
// confidence interval (gradient noise scale, critical batch size).
//
// Efron & Tibshirani (1993), "An Introduction to the Bootstrap", ch. 13 (percentile interval);
// Künsch (1989), "The jackknife and the bootstrap for general stationary observations", Ann.
// Statist. 17(3) (moving-block bootstrap for autocorrelated series such as per-step estimates).
//
//   Resampler rs(/*seed=*/1);
//   std::vector<double> reps;
//   for (int r = 0; r < 1000; ++r) reps.push_back(Statistic(rs.BlockIndices(n, block)));
//   Interval ci = PercentileInterval(point, reps, 0.95);
#ifndef BATCHLAB_ANALYSIS_BOOTSTRAP_H_
#define BATCHLAB_ANALYSIS_BOOTSTRAP_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace batchlab::analysis {

// A point estimate with a two-sided interval [low, high] at `confidence`.
struct Interval {
  double value = 0;
  double low = 0;
  double high = 0;
  double confidence = 0.95;
  bool Contains(double x) const { return low <= x && x <= high; }
};

// Draws resampling indices from a seeded generator, reproducible across runs and platforms:
// xoshiro256** (D. Blackman and S. Vigna, "Scrambled Linear Pseudorandom Number Generators",
// ACM TOMS 47(4), 2021) seeded through splitmix64, with Lemire's unbiased multiply-shift range
// reduction (D. Lemire, "Fast Random Integer Generation in an Interval", ACM TOMACS 29(1), 2019).
// A bootstrap draws hundreds of millions of indices over a large sweep, so speed matters here.
class Resampler {
 public:
  explicit Resampler(uint64_t seed);

  // A uniform index in [0, n).
  size_t Index(size_t n);
  // n indices drawn with replacement from [0, n).
  std::vector<size_t> Indices(size_t n);
  // n indices built from blocks of `block` consecutive indices whose starts are drawn uniformly
  // (moving-block bootstrap); block <= 1 is the ordinary bootstrap.
  std::vector<size_t> BlockIndices(size_t n, size_t block);

 private:
  uint64_t Next();
  uint64_t s_[4];
};

// The q-quantile (0 <= q <= 1) of `values` by linear interpolation between order statistics.
// `values` is partially reordered in place (selection); +inf and -inf are allowed.
double Quantile(std::vector<double>& values, double q);

// The percentile interval of `replicates` around `point`.
Interval PercentileInterval(double point, std::vector<double> replicates, double confidence);

// The default block length of the moving-block bootstrap for a series of n values: n^(1/3),
// at least 1 (Hall, Horowitz & Jing 1995, Biometrika 82(3)).
size_t DefaultBlockLength(size_t n);

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_BOOTSTRAP_H_
