// Resampling and percentile intervals (see bootstrap.h).
#include "analysis/estimators/bootstrap.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

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

double Resampler::Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

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

void Interval::MarkUnavailable(std::string why) {
  unavailable = std::move(why);
  low = high = std::nan("");
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

double NormalQuantile(double p) {
  if (!(p > 0)) return -std::numeric_limits<double>::infinity();
  if (!(p < 1)) return std::numeric_limits<double>::infinity();
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                             -2.759285104469687e+02, 1.383577518672690e+02,
                             -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                             -1.556989798598866e+02, 6.680131188771972e+01,
                             -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                             -2.400758277161838e+00, -2.549732539343734e+00,
                             4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
                             2.445134137142996e+00, 3.754408661907416e+00};
  double x;
  if (p < 0.02425) {
    const double q = std::sqrt(-2 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else if (p > 1 - 0.02425) {
    const double q = std::sqrt(-2 * std::log(1 - p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else {
    const double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  }
  // One Newton step on Φ(x) = p.
  const double e = 0.5 * std::erfc(-x / std::sqrt(2.0)) - p;
  const double u = e * std::sqrt(2 * M_PI) * std::exp(x * x / 2);
  return x - u / (1 + x * u / 2);
}

double StudentQuantile(double p, double dof) {
  if (dof == 1) return std::tan(M_PI * (p - 0.5));
  if (dof == 2) return (2 * p - 1) / std::sqrt(2 * p * (1 - p));
  const double z = NormalQuantile(p), z2 = z * z, v = dof;
  const double g1 = (z2 + 1) * z / 4;
  const double g2 = ((5 * z2 + 16) * z2 + 3) * z / 96;
  const double g3 = (((3 * z2 + 19) * z2 + 17) * z2 - 15) * z / 384;
  const double g4 = ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) * z / 92160;
  return z + g1 / v + g2 / (v * v) + g3 / (v * v * v) + g4 / (v * v * v * v);
}

Interval ExpandedPercentileInterval(double point, std::vector<double> replicates, double confidence,
                                    double dof) {
  if (!(dof > 0) || !std::isfinite(dof)) {
    return PercentileInterval(point, std::move(replicates), confidence);
  }
  const double tail = (1.0 - confidence) / 2.0;
  const double n = dof + 1;
  const double z = std::sqrt(n / (n - 1)) * StudentQuantile(1 - tail, dof);
  const double expanded_tail = 0.5 * std::erfc(z / std::sqrt(2.0));  // Φ(−z)
  Interval out = PercentileInterval(point, std::move(replicates), 1 - 2 * expanded_tail);
  out.confidence = confidence;
  return out;
}

size_t DefaultBlockLength(size_t n) {
  return std::max<size_t>(1, static_cast<size_t>(std::lround(std::cbrt(static_cast<double>(n)))));
}

}  // namespace batchlab::analysis
