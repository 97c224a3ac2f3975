// Critical batch size fit (see critical_batch.h and docs/methods.md §3).
#include "analysis/critical_batch.h"

#include <cmath>
#include <limits>
#include <map>

#include <fmt/core.h>

#include "analysis/table.h"

namespace batchlab::analysis {

namespace {

struct Line {
  double a = 0;  // S_min
  double b = 0;  // E_min
  bool ok = false;
};

// Weighted least squares of y = a + b·x with weights 1/y².
Line FitLine(const std::vector<double>& x, const std::vector<double>& y) {
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double w = 1.0 / (y[i] * y[i]);
    sw += w;
    sx += w * x[i];
    sy += w * y[i];
    sxx += w * x[i] * x[i];
    sxy += w * x[i] * y[i];
  }
  const double det = sw * sxx - sx * sx;
  Line l;
  if (!(std::fabs(det) > 1e-300)) return l;
  l.b = (sw * sxy - sx * sy) / det;
  l.a = (sy - l.b * sx) / sw;
  l.ok = std::isfinite(l.a) && std::isfinite(l.b);
  return l;
}

double BCrit(const Line& l) {
  if (!l.ok) return std::nan("");
  if (l.a <= 0) return std::numeric_limits<double>::infinity();
  return std::max(l.b, 0.0) / l.a;
}

}  // namespace

double CritFit::StepsAt(double batch_size) const {
  return s_min.value * (1.0 + b_crit.value / batch_size);
}

double CritFit::ExamplesAt(double batch_size) const {
  return e_min.value * (1.0 + batch_size / b_crit.value);
}

StatusOr<CritFit> FitCriticalBatch(const std::vector<StepsPoint>& points, const CritOptions& opt) {
  std::map<double, std::vector<double>> by_batch;
  for (const StepsPoint& p : points) {
    if (!(p.batch_size > 0) || !(p.steps > 0) || !std::isfinite(p.steps)) {
      return InvalidArgumentError(fmt::format(
          "steps-to-target point (batch_size={}, steps={}) must have positive finite values",
          p.batch_size, p.steps));
    }
    by_batch[p.batch_size].push_back(p.steps);
  }
  if (by_batch.size() < 3) {
    return FailedPreconditionError(fmt::format(
        "the critical-batch fit needs runs reaching the target at >= 3 distinct batch sizes, "
        "got {}; add batch sizes to the sweep's axes.batch_size or relax the target",
        by_batch.size()));
  }
  std::vector<double> x, y;
  for (const StepsPoint& p : points) {
    x.push_back(1.0 / p.batch_size);
    y.push_back(p.steps);
  }
  const Line line = FitLine(x, y);
  if (!line.ok) return InternalError("critical-batch fit: singular normal equations");
  if (line.a <= 0) {
    return FailedPreconditionError(fmt::format(
        "steps to target keep falling like 1/B up to the largest batch size ({}): fitted S_min = "
        "{} <= 0, so B_crit lies beyond the swept range; sweep larger batch sizes",
        by_batch.rbegin()->first, FormatNumber(line.a, 3)));
  }
  if (line.b <= 0) {
    return FailedPreconditionError(fmt::format(
        "steps to target do not fall with batch size (fitted E_min = {} <= 0): B_crit lies "
        "below the smallest batch size ({}); sweep smaller batch sizes",
        FormatNumber(line.b, 3), by_batch.begin()->first));
  }
  CritFit fit;
  fit.points = static_cast<int>(points.size());
  fit.batch_sizes = static_cast<int>(by_batch.size());
  double ss = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    CritResidual r;
    r.batch_size = points[i].batch_size;
    r.steps = y[i];
    r.fitted = line.a + line.b * x[i];
    r.relative = (r.steps - r.fitted) / r.fitted;
    ss += r.relative * r.relative;
    fit.residuals.push_back(r);
  }
  fit.rms_relative_residual = std::sqrt(ss / static_cast<double>(points.size()));

  bool seeds = true;
  for (const auto& [b, v] : by_batch) seeds = seeds && v.size() >= 2;
  fit.bootstrap = seeds ? "seeds" : "residuals";
  // Residuals are centred and inflated by sqrt(n / (n − 2)) for the two fitted parameters
  // (Davison & Hinkley 1997, "Bootstrap Methods and their Application", eq. 6.9).
  const double n = static_cast<double>(points.size());
  const double inflate = n > 2 ? std::sqrt(n / (n - 2)) : 1.0;
  double mean_rel = 0;
  for (const CritResidual& r : fit.residuals) mean_rel += r.relative;
  mean_rel /= n;

  Resampler rs(opt.seed);
  std::vector<double> rep_a, rep_b, rep_c;
  std::vector<double> bx, by;
  for (int rep = 0; rep < opt.resamples; ++rep) {
    bx.clear();
    by.clear();
    if (seeds) {
      for (const auto& [b, v] : by_batch) {
        for (size_t k = 0; k < v.size(); ++k) {
          bx.push_back(1.0 / b);
          by.push_back(v[rs.Index(v.size())]);
        }
      }
    } else {
      for (size_t i = 0; i < points.size(); ++i) {
        const double e = (fit.residuals[rs.Index(points.size())].relative - mean_rel) * inflate;
        bx.push_back(x[i]);
        by.push_back(std::max(fit.residuals[i].fitted * (1.0 + e), 1e-12));
      }
    }
    const Line l = FitLine(bx, by);
    if (!l.ok) continue;
    rep_a.push_back(l.a);
    rep_b.push_back(l.b);
    rep_c.push_back(BCrit(l));
  }
  fit.resamples = static_cast<int>(rep_c.size());
  fit.s_min = PercentileInterval(line.a, std::move(rep_a), opt.confidence);
  fit.e_min = PercentileInterval(line.b, std::move(rep_b), opt.confidence);
  fit.b_crit = PercentileInterval(line.b / line.a, std::move(rep_c), opt.confidence);
  fit.b_crit_outside_sweep =
      fit.b_crit.value < by_batch.begin()->first || fit.b_crit.value > by_batch.rbegin()->first;
  return fit;
}

std::vector<StepsPoint> StepsPointsOf(const std::vector<BatchBest>& best) {
  std::vector<StepsPoint> out;
  for (const BatchBest& b : best) {
    if (!b.best) continue;
    for (double s : b.seed_steps) out.push_back({static_cast<double>(b.batch_size), s});
  }
  return out;
}

Region RegionOf(double batch_size, double b_crit) {
  if (batch_size <= b_crit / 10.0) return Region::kPerfectScaling;
  if (batch_size >= b_crit * 10.0) return Region::kMaxDataParallelism;
  return Region::kDiminishingReturns;
}

const char* RegionName(Region r) {
  switch (r) {
    case Region::kPerfectScaling:
      return "near-perfect scaling";
    case Region::kDiminishingReturns:
      return "diminishing returns";
    case Region::kMaxDataParallelism:
      return "maximal data parallelism";
  }
  return "unknown";
}

}  // namespace batchlab::analysis
