// Resampling and percentile intervals (see bootstrap.h).
#include "analysis/bootstrap.h"

#include <algorithm>
#include <cmath>

namespace batchlab::analysis {

size_t Resampler::Index(size_t n) {
  // Rejection sampling keeps the index exactly uniform and the sequence platform independent.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do {
    x = rng_();
  } while (x >= limit);
  return static_cast<size_t>(x % n);
}

std::vector<size_t> Resampler::Indices(size_t n) {
  std::vector<size_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = Index(n);
  return out;
}

std::vector<size_t> Resampler::BlockIndices(size_t n, size_t block) {
  if (block <= 1 || n <= block) return Indices(n);
  std::vector<size_t> out;
  out.reserve(n + block);
  const size_t starts = n - block + 1;
  while (out.size() < n) {
    const size_t s = Index(starts);
    for (size_t j = 0; j < block && out.size() < n; ++j) out.push_back(s + j);
  }
  return out;
}

double Quantile(std::vector<double>& values, double q) {
  if (values.empty()) return std::nan("");
  std::sort(values.begin(), values.end());
  const double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  if (frac == 0 || values[lo] == values[hi]) return values[lo];
  if (std::isinf(values[lo]) || std::isinf(values[hi])) return frac < 0.5 ? values[lo] : values[hi];
  return values[lo] + frac * (values[hi] - values[lo]);
}

Interval PercentileInterval(double point, std::vector<double> replicates, double confidence) {
  Interval out;
  out.value = point;
  out.confidence = confidence;
  const double tail = (1.0 - confidence) / 2.0;
  out.low = Quantile(replicates, tail);
  out.high = Quantile(replicates, 1.0 - tail);
  return out;
}

size_t DefaultBlockLength(size_t n) {
  return std::max<size_t>(1, static_cast<size_t>(std::lround(std::cbrt(static_cast<double>(n)))));
}

}  // namespace batchlab::analysis
