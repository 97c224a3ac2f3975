// The gradient noise scale B_simple = tr(Σ) / |G|² (McCandlish, Kaplan, Amodei & OpenAI Dota
// Team 2018, "An Empirical Model of Large-Batch Training", arXiv:1812.06162, Appendix A).
//
// The runner logs, on measured steps, the squared norm of a gradient at two batch sizes:
// |G_small|² at B_small (a rank's local gradient, or one micro-batch's, averaged over ranks or
// micro-batches) and |G_big|² at B_big (the allreduced / accumulated gradient). Since
// E|G_B|² = |G|² + tr(Σ)/B, two batch sizes give unbiased estimates of both terms:
//   |G|²   = (B_big |G_big|² − B_small |G_small|²) / (B_big − B_small)
//   tr(Σ)  = (|G_small|² − |G_big|²) / (1/B_small − 1/B_big)
// Each is smoothed separately (debiased EMA) before taking the ratio, because the ratio of two
// noisy estimates is biased. See docs/methods.md.
//
//   std::vector<GnsSample> samples = GnsSamplesOf(run);            // from the run's metrics
//   BATCHLAB_ASSIGN_OR_RETURN(auto series, GnsSeries(samples, 0.99));   // smoothed, per step
//   GnsOptions opt;  opt.from_step = 500;                           // window for the estimate
//   BATCHLAB_ASSIGN_OR_RETURN(GnsEstimate est, EstimateGns(samples, opt));
//   fmt::print("B_simple = {} [{}, {}]\n", est.b_simple.value, est.b_simple.low,
//   est.b_simple.high);
#ifndef BATCHLAB_ANALYSIS_ESTIMATORS_GRADIENT_NOISE_H_
#define BATCHLAB_ANALYSIS_ESTIMATORS_GRADIENT_NOISE_H_

#include <cstdint>
#include <limits>
#include <vector>

#include "analysis/estimators/bootstrap.h"
#include "analysis/data/run_data.h"
#include "base/status.h"

namespace batchlab::analysis {

// One measured step: squared gradient norms at two batch sizes (the runner's gns_* metrics).
struct GnsSample {
  int64_t step = 0;
  double b_small = 0;
  double b_big = 0;
  double sq_small = 0;  // |G_small|², averaged over ranks / micro-batches
  double sq_big = 0;    // |G_big|²
};

// The unbiased single-step estimates of |G|² and tr(Σ).
struct GnsTerms {
  double g2 = 0;
  double trace = 0;
};

// App. A estimates for one sample; InvalidArgument when b_small >= b_big or a size is not positive.
StatusOr<GnsTerms> UnbiasedTerms(const GnsSample& s);

// An exponential moving average with the start-up bias removed (Kingma & Ba 2015, Adam, §3):
// m_t = β m_{t−1} + (1 − β) x_t, value = m_t / (1 − β^t).
class DebiasedEma {
 public:
  explicit DebiasedEma(double beta) : beta_(beta) {}
  void Add(double x);
  double value() const;  // NaN before the first Add
  int64_t count() const { return count_; }

 private:
  double beta_;
  double m_ = 0;
  double beta_pow_ = 1;
  int64_t count_ = 0;
};

// The smoothed estimates after a step.
struct GnsPoint {
  int64_t step = 0;
  double g2 = 0;        // smoothed |G|²
  double trace = 0;     // smoothed tr(Σ)
  double b_simple = 0;  // trace / g2; +inf when the smoothed |G|² is not positive
};

// The smoothed series, one point per sample (samples in step order). β in [0, 1).
StatusOr<std::vector<GnsPoint>> GnsSeries(const std::vector<GnsSample>& samples, double beta);

struct GnsOptions {
  int64_t from_step = 0;  // window of steps the estimate uses: from_step <= step <= to_step
  int64_t to_step = std::numeric_limits<int64_t>::max();
  int resamples = 1000;  // bootstrap replicates
  size_t block = 0;      // moving-block length in samples; 0 = DefaultBlockLength(n)
  double confidence = 0.95;
  uint64_t seed = 1;
};

// B_simple over a window of steps: the ratio of the window means of tr(Σ) and |G|² (the β → 1
// limit of the smoothed ratio), with a moving-block bootstrap interval over steps.
struct GnsEstimate {
  Interval b_simple;  // +inf bounds when a replicate's |G|² mean is not positive
  double g2 = 0;      // window mean of the unbiased |G|²
  double trace = 0;   // window mean of the unbiased tr(Σ)
  int64_t samples = 0;
  int64_t first_step = 0;
  int64_t last_step = 0;
};

// FailedPrecondition when the window holds fewer than 2 samples or its mean |G|² is not
// positive (noise dominates: more steps or a larger B_big are needed).
StatusOr<GnsEstimate> EstimateGns(const std::vector<GnsSample>& samples, const GnsOptions& options);

// An interval wider than this many orders of magnitude (high / low >= 10^4) determines nothing:
// such an estimate is reported as undetermined (issue 33: a run stuck at chance gave 7.6 to
// 27,985), not as a value.
inline constexpr double kGnsMaxOrdersOfMagnitude = 4;

// Why `estimate` is undetermined ("" when it is not): its interval's bounds span
// kGnsMaxOrdersOfMagnitude or more orders of magnitude.
std::string GnsUndetermined(const GnsEstimate& estimate);

// The spread of per-seed estimates of the same configuration.
struct SeedSpread {
  double mean = 0;
  double stddev = 0;  // sample standard deviation (n − 1); 0 for one seed
  double min = 0;
  double max = 0;
  int n = 0;
};
SeedSpread SpreadAcrossSeeds(const std::vector<double>& b_simple_per_seed);

// The gns_* metrics of a run, joined by step (steps missing any of the four are skipped).
std::vector<GnsSample> GnsSamplesOf(const RunData& run);

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_ESTIMATORS_GRADIENT_NOISE_H_
