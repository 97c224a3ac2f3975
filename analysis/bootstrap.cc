// Resampling and percentile intervals (see bootstrap.h).
#include "analysis/bootstrap.h"

#include <algorithm>
#include <cmath>

namespace batchlab::analysis {

namespace {

__extension__ typedef unsigned __int128 Uint128;  // GCC/Clang; __extension__ keeps -Wpedantic quiet

uint64_t SplitMix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

Resampler::Resampler(uint64_t seed) {
  for (uint64_t& w : s_) w = SplitMix64(seed);
}

uint64_t Resampler::Next() {  // xoshiro256**
  const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = Rotl(s_[3], 45);
  return result;
}

size_t Resampler::Index(size_t n) {
  // Lemire's method: the high word of x·n, rejecting the few low words that would bias it.
  const uint64_t range = n;
  Uint128 m = static_cast<Uint128>(Next()) * range;
  uint64_t low = static_cast<uint64_t>(m);
  if (low < range) {
    const uint64_t threshold = (0 - range) % range;
    while (low < threshold) {
      m = static_cast<Uint128>(Next()) * range;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<size_t>(m >> 64);
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
  const double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  // Selection, not a full sort: the two order statistics around pos in O(n).
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(lo), values.end());
  const double vlo = values[lo];
  const double vhi =
      hi == lo ? vlo
               : *std::min_element(values.begin() + static_cast<std::ptrdiff_t>(hi), values.end());
  const double frac = pos - static_cast<double>(lo);
  if (frac == 0 || vlo == vhi) return vlo;
  if (std::isinf(vlo) || std::isinf(vhi)) return frac < 0.5 ? vlo : vhi;
  return vlo + frac * (vhi - vlo);
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
