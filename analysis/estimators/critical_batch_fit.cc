// Critical batch size fit (see critical_batch_fit.h and docs/methods.md §3).
#include "analysis/estimators/critical_batch_fit.h"

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "analysis/data/table.h"

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
  std::map<double, std::vector<size_t>> by_batch;  // batch size -> indices into points
  for (size_t i = 0; i < points.size(); ++i) {
    const StepsPoint& p = points[i];
    if (!(p.batch_size > 0) || !(p.steps > 0) || !std::isfinite(p.steps) ||
        !(p.resolution >= 0) || !std::isfinite(p.resolution)) {
      return InvalidArgumentError(fmt::format(
          "steps-to-target point (batch_size={}, steps={}, resolution={}) must have positive "
          "finite batch size and steps and a non-negative resolution",
          p.batch_size, p.steps, p.resolution));
    }
    by_batch[p.batch_size].push_back(i);
  }
  if (by_batch.size() < 3) {
    return FailedPreconditionError(fmt::format(
        "the critical-batch fit needs runs reaching the target at >= 3 distinct batch sizes, "
        "got {}; add batch sizes to the sweep's axes.batch_size or relax the target",
        by_batch.size()));
  }
  // Each point at the middle of its quantisation interval: the target was crossed at one of the
  // `resolution` steps up to `steps`, so its expected step is steps − (resolution − 1)/2.
  std::vector<double> x, y, half;
  for (const StepsPoint& p : points) {
    const double r = std::max(1.0, std::min(p.resolution, p.steps));
    x.push_back(1.0 / p.batch_size);
    y.push_back(p.steps - (r - 1) / 2);
    half.push_back((r - 1) / 2);
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
    r.steps = points[i].steps;
    r.resolution = points[i].resolution;
    r.fitted = line.a + line.b * x[i];
    r.relative = (y[i] - r.fitted) / r.fitted;
    ss += r.relative * r.relative;
    fit.residuals.push_back(r);
    fit.max_resolution = std::max(fit.max_resolution, points[i].resolution);
  }
  fit.rms_relative_residual = std::sqrt(ss / static_cast<double>(points.size()));

  // Seed noise: each point's relative deviation from its batch size's seed mean, inflated by
  // sqrt(n_b / (n_b − 1)) so that its mean square estimates the seed variance without bias;
  // pooled over batch sizes (the noise is taken as proportional to the steps).
  std::vector<double> seed_dev;
  double seed_var = 0;  // pooled relative seed variance
  std::map<double, double> mean_of;  // batch size -> seed mean
  for (const auto& [b, idx] : by_batch) {
    double m = 0;
    for (size_t i : idx) m += y[i];
    m /= static_cast<double>(idx.size());
    mean_of[b] = m;
    if (idx.size() < 2) continue;
    const double nb = static_cast<double>(idx.size());
    fit.seed_dof += static_cast<int>(idx.size()) - 1;
    for (size_t i : idx) {
      const double e = (y[i] / m - 1) * std::sqrt(nb / (nb - 1));
      seed_dev.push_back(e);
      seed_var += e * e;
    }
  }
  const bool seeds = fit.seed_dof >= 2;
  if (seeds) seed_var /= static_cast<double>(seed_dev.size());
  // Lack of fit beyond the seed noise: the batch-size means' relative residuals (centred, and
  // inflated by sqrt(m / (m − 2)) for the two fitted parameters: Davison & Hinkley 1997, eq. 6.9),
  // whose mean square also holds the seed noise of a mean, seed_var / n_b: only the excess is
  // lack of fit, so the residuals are shrunk to it (a method-of-moments split of the two
  // variance components, as in one-way random-effects ANOVA).
  const double m_b = static_cast<double>(by_batch.size());
  std::vector<double> lof;
  double lof_ms = 0, seed_part = 0, lof_mean = 0;
  for (const auto& [b, idx] : by_batch) {
    const double f = line.a + line.b / b;
    lof.push_back(mean_of[b] / f - 1);
    lof_mean += lof.back();
    seed_part += seed_var / static_cast<double>(idx.size());
  }
  lof_mean /= m_b;
  const double inflate = std::sqrt(m_b / (m_b - 2));
  for (double& r : lof) {
    r = (r - lof_mean) * inflate;
    lof_ms += r * r;
  }
  lof_ms /= m_b;
  if (lof_ms < 1e-18) lof_ms = 0;  // points on the curve up to rounding: no lack of fit
  seed_part /= m_b;
  const double lof_var = std::max(0.0, lof_ms - (seeds ? seed_part : 0.0));
  const double shrink = lof_ms > 0 ? std::sqrt(lof_var / lof_ms) : 0.0;
  fit.seed_relative_sd = seeds ? std::sqrt(seed_var) : 0;
  fit.lack_of_fit_relative_sd = std::sqrt(lof_var);
  const bool residuals = shrink > 0 && (seeds || by_batch.size() >= 4);
  const bool quantised = fit.max_resolution > 1;
  fit.bootstrap = seeds && residuals ? "seeds+residuals" : seeds ? "seeds" : "residuals";
  if (quantised) fit.bootstrap += "+quantisation";

  Resampler rs(opt.seed);
  std::vector<double> rep_a, rep_b, rep_c;
  std::vector<double> bx, by;
  for (int rep = 0; rep < opt.resamples; ++rep) {
    bx.clear();
    by.clear();
    for (const auto& [b, idx] : by_batch) {
      const double f = line.a + line.b / b;
      const double d = residuals ? shrink * lof[rs.Index(lof.size())] : 0.0;
      for (size_t i : idx) {
        const double e = seeds ? seed_dev[rs.Index(seed_dev.size())] : 0.0;
        // A uniform draw of where in its evaluation interval the target was crossed.
        const double u = half[i] > 0 ? (2.0 * rs.Uniform() - 1.0) * half[i] : 0.0;
        bx.push_back(1.0 / b);
        by.push_back(std::max(f * (1.0 + d) * (1.0 + e) + u, 1e-12));
      }
    }
    const Line l = FitLine(bx, by);
    if (!l.ok) continue;
    rep_a.push_back(l.a);
    rep_b.push_back(l.b);
    rep_c.push_back(BCrit(l));
  }
  fit.resamples = static_cast<int>(rep_c.size());
  // The expanded percentile interval for the degrees of freedom the noise was measured with.
  const double dof = seeds ? fit.seed_dof : m_b - 2;
  fit.s_min = ExpandedPercentileInterval(line.a, std::move(rep_a), opt.confidence, dof);
  fit.e_min = ExpandedPercentileInterval(line.b, std::move(rep_b), opt.confidence, dof);
  fit.b_crit = ExpandedPercentileInterval(line.b / line.a, std::move(rep_c), opt.confidence, dof);
  std::string method = fmt::format(
      "expanded percentile bootstrap (Hesterberg 2015; {} degrees of freedom) of the weighted fit "
      "over ",
      dof);
  std::vector<std::string> parts;
  if (seeds) {
    parts.push_back(fmt::format("seed-to-seed variation (pooled, {} degrees of freedom, relative "
                                "sd {})",
                                fit.seed_dof, FormatNumber(fit.seed_relative_sd, 3)));
  }
  if (residuals) {
    parts.push_back(fmt::format("the fit's residuals beyond the seed noise (relative sd {})",
                                FormatNumber(fit.lack_of_fit_relative_sd, 3)));
  }
  if (quantised) {
    parts.push_back(fmt::format("the evaluation cadence (up to {} steps)",
                                FormatNumber(fit.max_resolution, 3)));
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    method += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  }
  if (parts.empty()) method += "nothing: the data show no noise";
  std::string why;
  if (!seeds && by_batch.size() < 4) {
    why = fmt::format(
        "{} batch sizes with {} leave {} residual degree of freedom and no seed-to-seed "
        "variation to measure the noise with; run >= 2 seeds per batch size (axes.seed) or add "
        "batch sizes",
        by_batch.size(), fit.seed_dof == 0 ? "one seed each" : "too few repeated seeds",
        by_batch.size() - 2);
  } else if (fit.resamples < 20) {
    why = fmt::format("only {} bootstrap resamples could be fitted; raise --resamples",
                      fit.resamples);
  }
  for (Interval* iv : {&fit.s_min, &fit.e_min, &fit.b_crit}) {
    iv->method = method;
    if (!why.empty()) {
      iv->MarkUnavailable(why);
    } else if (!(iv->high - iv->low > 1e-9 * std::fabs(iv->value))) {
      iv->MarkUnavailable(
          "every resample gave the same fit: the seeds agree exactly, the points lie on the curve "
          "and the evaluation cadence is 1 step, so the data show no noise to build an interval "
          "from; run more seeds (axes.seed)");
    }
  }
  fit.b_crit_outside_sweep =
      fit.b_crit.value < by_batch.begin()->first || fit.b_crit.value > by_batch.rbegin()->first;
  return fit;
}

std::vector<StepsPoint> StepsPointsOf(const std::vector<BatchBest>& best) {
  std::vector<StepsPoint> out;
  for (const BatchBest& b : best) {
    if (!b.best) continue;
    for (size_t i = 0; i < b.seed_steps.size(); ++i) {
      const double r = i < b.seed_resolution.size() ? b.seed_resolution[i] : 0.0;
      out.push_back({static_cast<double>(b.batch_size), b.seed_steps[i], r});
    }
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
