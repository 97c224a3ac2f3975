// Gradient noise scale estimators (see gradient_noise.h and docs/methods.md §1).
#include "analysis/estimators/gradient_noise.h"

#include <cmath>
#include <unordered_map>

#include <fmt/core.h>

#include "analysis/data/table.h"
#include "base/run_protocol.h"

namespace batchlab::analysis {

StatusOr<GnsTerms> UnbiasedTerms(const GnsSample& s) {
  if (!(s.b_small > 0) || !(s.b_big > s.b_small)) {
    return InvalidArgumentError(fmt::format(
        "step {}: gns_b_small={} and gns_b_big={} must satisfy 0 < gns_b_small < gns_b_big "
        "(measure the noise with more than one rank or with accumulation > 1)",
        s.step, s.b_small, s.b_big));
  }
  GnsTerms t;
  t.g2 = (s.b_big * s.sq_big - s.b_small * s.sq_small) / (s.b_big - s.b_small);
  t.trace = (s.sq_small - s.sq_big) / (1.0 / s.b_small - 1.0 / s.b_big);
  return t;
}

void DebiasedEma::Add(double x) {
  m_ = beta_ * m_ + (1.0 - beta_) * x;
  beta_pow_ *= beta_;
  ++count_;
}

double DebiasedEma::value() const {
  if (count_ == 0) return std::nan("");
  return m_ / (1.0 - beta_pow_);
}

namespace {

double Ratio(double trace, double g2) {
  return g2 > 0 ? trace / g2 : std::numeric_limits<double>::infinity();
}

}  // namespace

StatusOr<std::vector<GnsPoint>> GnsSeries(const std::vector<GnsSample>& samples, double beta) {
  if (!(beta >= 0 && beta < 1)) {
    return InvalidArgumentError(
        fmt::format("EMA beta={} must be in [0, 1) (e.g. --beta 0.99)", beta));
  }
  DebiasedEma g2(beta), trace(beta);
  std::vector<GnsPoint> out;
  out.reserve(samples.size());
  for (const GnsSample& s : samples) {
    BATCHLAB_ASSIGN_OR_RETURN(GnsTerms t, UnbiasedTerms(s));
    g2.Add(t.g2);
    trace.Add(t.trace);
    out.push_back({s.step, g2.value(), trace.value(), Ratio(trace.value(), g2.value())});
  }
  return out;
}

StatusOr<GnsEstimate> EstimateGns(const std::vector<GnsSample>& samples,
                                  const GnsOptions& options) {
  std::vector<GnsTerms> terms;
  GnsEstimate est;
  for (const GnsSample& s : samples) {
    if (s.step < options.from_step || s.step > options.to_step) continue;
    BATCHLAB_ASSIGN_OR_RETURN(GnsTerms t, UnbiasedTerms(s));
    if (terms.empty()) est.first_step = s.step;
    est.last_step = s.step;
    terms.push_back(t);
  }
  const size_t n = terms.size();
  if (n < 2) {
    return FailedPreconditionError(fmt::format(
        "only {} gradient-noise sample(s) in steps [{}, {}]; need at least 2 (set gns.every_steps "
        "> 0 in the sweep spec, or widen the step window)",
        n, options.from_step, options.to_step));
  }
  // Prefix sums make each moving block's sum O(1): a replicate costs n/block draws.
  std::vector<double> pg(n + 1, 0.0), pt(n + 1, 0.0);
  for (size_t i = 0; i < n; ++i) {
    pg[i + 1] = pg[i] + terms[i].g2;
    pt[i + 1] = pt[i] + terms[i].trace;
  }
  est.samples = static_cast<int64_t>(n);
  est.g2 = pg[n] / static_cast<double>(n);
  est.trace = pt[n] / static_cast<double>(n);
  const double point = Ratio(est.trace, est.g2);
  if (!(est.g2 > 0)) {
    return FailedPreconditionError(fmt::format(
        "the mean unbiased |G|² over steps [{}, {}] is {} (not positive): gradient noise "
        "dominates the signal; use more steps or a larger gradient-noise batch B_big",
        est.first_step, est.last_step, FormatNumber(est.g2, 3)));
  }
  Resampler rs(options.seed);
  size_t block = options.block > 0 ? options.block : DefaultBlockLength(n);
  if (block >= n) block = 1;  // one block would be the whole series: ordinary bootstrap
  const size_t starts = n - block + 1;
  std::vector<double> reps;
  reps.reserve(static_cast<size_t>(std::max(options.resamples, 0)));
  for (int r = 0; r < options.resamples; ++r) {
    // Blocks of `block` consecutive steps from uniform starts until n steps are drawn (the last
    // block truncated), as in Resampler::BlockIndices.
    double g2 = 0, tr = 0;
    for (size_t filled = 0; filled < n;) {
      const size_t s = rs.Index(starts);
      const size_t len = std::min(block, n - filled);
      g2 += pg[s + len] - pg[s];
      tr += pt[s + len] - pt[s];
      filled += len;
    }
    reps.push_back(Ratio(tr, g2));  // the ratio of sums equals the ratio of means
  }
  est.b_simple = PercentileInterval(point, std::move(reps), options.confidence);
  est.b_simple.method = fmt::format(
      "percentile moving-block bootstrap over the window's {} measured steps (block {}): covers "
      "step-to-step noise of this run, not seed-to-seed variation",
      n, block);
  if (n < 2) {
    est.b_simple.MarkUnavailable(
        "one measured step in the window: no spread to resample; widen the window or measure "
        "more often (gns.every_steps)");
  } else if (!(est.b_simple.high > est.b_simple.low)) {
    est.b_simple.MarkUnavailable(
        "every resample gave the same value (the measured steps show no spread)");
  }
  return est;
}

SeedSpread SpreadAcrossSeeds(const std::vector<double>& v) {
  SeedSpread s;
  s.n = static_cast<int>(v.size());
  if (v.empty()) return s;
  s.min = s.max = v[0];
  for (double x : v) {
    s.mean += x;
    s.min = std::min(s.min, x);
    s.max = std::max(s.max, x);
  }
  s.mean /= s.n;
  if (s.n > 1) {
    double ss = 0;
    for (double x : v) ss += (x - s.mean) * (x - s.mean);
    s.stddev = std::sqrt(ss / (s.n - 1));
  }
  return s;
}

std::vector<GnsSample> GnsSamplesOf(const RunData& run) {
  const Series* bs = run.Metric(protocol::kMetricGnsBSmall);
  const Series* bb = run.Metric(protocol::kMetricGnsBBig);
  const Series* ss = run.Metric(protocol::kMetricGnsSqSmall);
  const Series* sb = run.Metric(protocol::kMetricGnsSqBig);
  std::vector<GnsSample> out;
  if (!bs || !bb || !ss || !sb) return out;
  // The four series are logged together, so they usually align index by index; join by step
  // otherwise.
  auto index = [](const Series& s) {
    std::unordered_map<int64_t, double> m;
    m.reserve(s.size());
    for (size_t i = 0; i < s.size(); ++i) m[s.steps[i]] = s.values[i];
    return m;
  };
  const bool aligned = bs->steps == bb->steps && bs->steps == ss->steps && bs->steps == sb->steps;
  if (aligned) {
    out.reserve(bs->size());
    for (size_t i = 0; i < bs->size(); ++i) {
      out.push_back({bs->steps[i], bs->values[i], bb->values[i], ss->values[i], sb->values[i]});
    }
    return out;
  }
  const auto mb = index(*bb), mss = index(*ss), msb = index(*sb);
  for (size_t i = 0; i < bs->size(); ++i) {
    const int64_t step = bs->steps[i];
    auto a = mb.find(step), b = mss.find(step), c = msb.find(step);
    if (a == mb.end() || b == mss.end() || c == msb.end()) continue;
    out.push_back({step, bs->values[i], a->second, b->second, c->second});
  }
  return out;
}

std::string GnsUndetermined(const GnsEstimate& e) {
  const Interval& i = e.b_simple;
  if (!i.available() || !(i.low > 0) || !std::isfinite(i.high)) return "";
  const double orders = std::log10(i.high / i.low);
  if (orders < kGnsMaxOrdersOfMagnitude) return "";
  return fmt::format(
      "undetermined: B_simple {} has the interval {} to {}, {} orders of magnitude wide (>= {}): "
      "the gradient signal is lost in its noise (a run stuck at chance, or too few measured "
      "steps)",
      ProseNumber(i.value), ProseNumber(i.low), ProseNumber(i.high),
      ProseNumber(std::floor(orders * 10) / 10), ProseNumber(kGnsMaxOrdersOfMagnitude));
}

}  // namespace batchlab::analysis
