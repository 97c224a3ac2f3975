// The learning-rate law, measured (see lr_law.h).
#include "analysis/estimators/lr_law.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "results/number_format.h"

namespace batchlab::analysis {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// One seed's score: its steps to the target (+inf: missed), a lower bound when it was pruned.
struct SeedSteps {
  double steps = 0;
  bool censored = false;
};

// One batch size's grid: increasing LR, each LR's seeds.
struct Grid {
  std::vector<double> lr, log_lr;
  std::vector<std::vector<SeedSteps>> seeds;
};

// An LR's score: the mean over its seeds (+inf if one missed), a lower bound of the mean when a
// seed was pruned (its steps are a lower bound).
struct Score {
  double mean = kInf;
  bool censored = false;
};
Score ScoreOf(const std::vector<SeedSteps>& v) {
  Score out;
  double s = 0;
  for (const SeedSteps& x : v) {
    if (!std::isfinite(x.steps)) return out;
    s += x.steps;
    out.censored = out.censored || x.censored;
  }
  if (!v.empty()) out.mean = s / static_cast<double>(v.size());
  return out;
}

// Whether score a ranks before b: fewer mean steps; on a tie a score that is exact ranks before a
// lower bound (the bound's true mean is at least as large), else the earlier (smaller) LR stays.
// `bounds_last`: every exact score ranks before every lower bound (a bootstrap replicate, below).
bool Before(const Score& a, const Score& b, bool bounds_last) {
  if (bounds_last && a.censored != b.censored) return b.censored;
  return a.mean < b.mean || (a.mean == b.mean && !a.censored && b.censored);
}

// The grid's best (fewest mean steps; a tie keeps the smaller LR) and, when it and both its
// neighbours have an exact finite score, the vertex of the parabola through the three points (in
// log η). A censored score (a pruned seed) takes part with its lower bound: pruning stopped that
// LR once the bound exceeded another configuration's mean, so it loses to that one here too; it
// is never a neighbour of the vertex (its value is only bounded). -1: none. `exact`: the best
// among the LRs whose seeds all reached the target (-1: none). In a bootstrap replicate
// (`bounds_last`) an LR that drew a pruned seed ranks after every LR whose drawn seeds all reached
// the target: pruning proved its mean slower on the seeds it saw, and a drawn bound alone (0 for a
// seed pruned before it started) says nothing more; its own reached seeds, drawn alone, still
// make it a candidate.
struct Best {
  int index = -1;
  int exact = -1;
  std::optional<double> vertex;
};
Best BestOf(const std::vector<double>& x, const std::vector<Score>& y, bool bounds_last = false) {
  Best b;
  for (size_t i = 0; i < y.size(); ++i) {
    if (!std::isfinite(y[i].mean)) continue;
    if (b.index < 0 || Before(y[i], y[static_cast<size_t>(b.index)], bounds_last)) {
      b.index = static_cast<int>(i);
    }
    if (!y[i].censored && (b.exact < 0 || Before(y[i], y[static_cast<size_t>(b.exact)], false))) {
      b.exact = static_cast<int>(i);
    }
  }
  const auto i = static_cast<size_t>(b.index);
  const auto usable = [&y](size_t j) { return std::isfinite(y[j].mean) && !y[j].censored; };
  if (b.index <= 0 || i + 1 >= y.size() || !usable(i - 1) || !usable(i) || !usable(i + 1)) {
    return b;
  }
  // Vertex of the parabola through (x0,y0), (x1,y1), (x2,y2) (Press et al., Numerical Recipes,
  // 3rd ed., §10.3, eq. 10.3.1); with y1 the lowest it lies between the midpoints of the cells.
  const double x0 = x[i - 1], x1 = x[i], x2 = x[i + 1];
  const double y0 = y[i - 1].mean, y1 = y[i].mean, y2 = y[i + 1].mean;
  const double num = (x1 - x0) * (x1 - x0) * (y1 - y2) - (x1 - x2) * (x1 - x2) * (y1 - y0);
  const double den = (x1 - x0) * (y1 - y2) - (x1 - x2) * (y1 - y0);
  if (den != 0) b.vertex = x1 - 0.5 * num / den;
  return b;
}

// The cell of grid point i in log η: between the midpoints to its neighbours (the point itself
// on a side without one).
std::pair<double, double> Cell(const std::vector<double>& x, size_t i) {
  return {i > 0 ? 0.5 * (x[i - 1] + x[i]) : x[i], i + 1 < x.size() ? 0.5 * (x[i] + x[i + 1]) : x[i]};
}

struct Fit {
  double alpha = 0, log_c = 0, se = 0;  // se: the slope's standard error (n >= 3)
};
Fit Ols(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  double mx = 0, my = 0;
  for (size_t i = 0; i < x.size(); ++i) mx += x[i] / n, my += y[i] / n;
  double sxx = 0, sxy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxx += (x[i] - mx) * (x[i] - mx);
    sxy += (x[i] - mx) * (y[i] - my);
  }
  Fit f;
  f.alpha = sxx > 0 ? sxy / sxx : 0;
  f.log_c = my - f.alpha * mx;
  if (x.size() >= 3 && sxx > 0) {
    double rss = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double r = y[i] - f.log_c - f.alpha * x[i];
      rss += r * r;
    }
    f.se = std::sqrt(rss / (n - 2) / sxx);
  }
  return f;
}

LrLaw EstimateOne(const std::string& others, const std::map<int64_t, Grid>& grids,
                  const LrLawOptions& options) {
  LrLaw law;
  law.others = others;
  const size_t reps = static_cast<size_t>(std::max(0, options.resamples));
  // Per batch: the replicates of log η* (aligned by replicate index across batches).
  std::vector<std::vector<double>> rep_log_lr;
  Resampler rs(options.seed * 0x9e3779b97f4a7c15ULL + 0x5851f42d4c957f2dULL);
  for (const auto& [batch, g] : grids) {
    BestLr b;
    b.batch_size = batch;
    b.lrs = static_cast<int>(g.log_lr.size());
    b.seeds = std::numeric_limits<int>::max();
    std::vector<Score> scores;
    for (const std::vector<SeedSteps>& s : g.seeds) {
      scores.push_back(ScoreOf(s));
      b.seeds = std::min(b.seeds, static_cast<int>(s.size()));
      for (const SeedSteps& x : s) b.pruned += x.censored ? 1 : 0;
    }
    const Best best = BestOf(g.log_lr, scores);
    // An LR whose seeds all reached the target is needed: a best that is only a lower bound
    // (pruned against a configuration outside this law's group) is not a measured optimum alone.
    b.reached = best.exact >= 0;
    std::vector<double> reps_here;
    if (b.reached) {
      const auto i = static_cast<size_t>(best.index);
      b.grid_lr = g.lr[i];
      b.best_steps = scores[i].mean;
      b.censored = scores[i].censored;
      b.at_low_edge = i == 0;
      b.at_high_edge = i + 1 == g.log_lr.size();
      b.interpolated = best.vertex.has_value();
      const double point = best.vertex.value_or(g.log_lr[i]);
      std::vector<Score> rep_scores(scores.size());
      for (size_t r = 0; r < reps; ++r) {
        double value;
        if (b.seeds >= 2) {
          for (size_t j = 0; j < g.seeds.size(); ++j) {
            const std::vector<SeedSteps>& s = g.seeds[j];
            std::vector<SeedSteps> drawn;
            for (size_t k = 0; k < s.size(); ++k) drawn.push_back(s[rs.Index(s.size())]);
            rep_scores[j] = ScoreOf(drawn);
          }
          const Best rb = BestOf(g.log_lr, rep_scores, /*bounds_last=*/true);
          if (rb.index < 0) {
            value = point;
          } else if (rb.vertex) {
            value = *rb.vertex;
          } else {  // the grid's best: anywhere in its cell
            const auto [lo, hi] = Cell(g.log_lr, static_cast<size_t>(rb.index));
            value = lo + (hi - lo) * rs.Uniform();
          }
        } else {  // one seed: only the grid's resolution is known
          const auto [lo, hi] = Cell(g.log_lr, i);
          value = lo + (hi - lo) * rs.Uniform();
        }
        reps_here.push_back(value);
      }
      std::vector<double> lr_reps;
      for (double v : reps_here) lr_reps.push_back(std::exp(v));
      // Few seeds: the expanded percentile interval (Hesterberg 2015, bootstrap.h), since the
      // plain one is too narrow with 2-5 seeds.
      b.lr = b.seeds >= 2 ? ExpandedPercentileInterval(std::exp(point), lr_reps, options.confidence,
                                                       b.seeds - 1)
                          : PercentileInterval(std::exp(point), lr_reps, options.confidence);
      // The grid's resolution bounds what the grid alone says: the interval holds at least the
      // best's cell (the vertex is a model of the curve between grid points); a best that is only
      // a lower bound also holds the cell of the best LR whose seeds all reached the target.
      for (const size_t c : {i, static_cast<size_t>(best.exact)}) {
        const auto [cell_lo, cell_hi] = Cell(g.log_lr, c);
        b.lr.low = std::min(b.lr.low, std::exp(cell_lo));
        b.lr.high = std::max(b.lr.high, std::exp(cell_hi));
      }
      b.lr.method = b.seeds >= 2 ? "bootstrap over seeds, and at least the LR grid's cell"
                                 : "the LR grid's resolution (one seed)";
      if (b.lrs < 2) b.lr.MarkUnavailable("one LR tried at this batch size: no optimum to locate");
    } else {
      b.lr.MarkUnavailable("no LR reached the target with every seed");
    }
    law.per_batch.push_back(b);
    rep_log_lr.push_back(std::move(reps_here));
  }

  // Interior points: usable for the peak and the fit (not a best that is only a lower bound).
  std::vector<size_t> interior;
  for (size_t i = 0; i < law.per_batch.size(); ++i) {
    const BestLr& b = law.per_batch[i];
    if (b.reached && !b.censored && !b.at_low_edge && !b.at_high_edge) interior.push_back(i);
  }
  size_t peak_pos = interior.size();  // position in `interior`
  if (interior.size() >= 2) {
    size_t top = 0;
    for (size_t p = 1; p < interior.size(); ++p) {
      if (law.per_batch[interior[p]].lr.value > law.per_batch[interior[top]].lr.value) top = p;
    }
    for (size_t p = top + 1; p < interior.size() && top > 0; ++p) {
      if (law.per_batch[interior[p]].lr.high < law.per_batch[interior[top]].lr.low) {
        law.peak = true;
        law.peak_batch = law.per_batch[interior[top]].batch_size;
        peak_pos = top;
        break;
      }
    }
  }
  std::vector<size_t> fit_idx(interior.begin(),
                              law.peak ? interior.begin() + static_cast<std::ptrdiff_t>(peak_pos) + 1
                                       : interior.end());
  law.fit_points = static_cast<int>(fit_idx.size());
  law.alpha.confidence = options.confidence;
  std::string peak_text;
  if (law.peak) {
    const BestLr& top = law.per_batch[interior[peak_pos]];
    const BestLr& last = law.per_batch[interior.back()];
    peak_text = fmt::format(
        " The best LR falls again past B = {} ({} there, {} [{}, {}] at B = {}): a peak, as Li et "
        "al. 2024 find for Adam past the noise scale; the law is fitted up to B = {}.",
        top.batch_size, results::FormatNumber(top.lr.value), results::FormatNumber(last.lr.value),
        results::FormatNumber(last.lr.low), results::FormatNumber(last.lr.high), last.batch_size,
        top.batch_size);
  }
  if (fit_idx.size() < 2) {
    law.alpha.MarkUnavailable("fewer than 2 batch sizes with a best LR inside the grid");
    law.reading = fmt::format(
        "No LR law: {} batch size(s) have a best LR inside the LR grid (a best LR at the grid's "
        "edge says only that the optimum lies beyond it; widen the grid).{}",
        fit_idx.size(), peak_text);
    return law;
  }
  std::vector<double> x, y;
  for (size_t i : fit_idx) {
    x.push_back(std::log(static_cast<double>(law.per_batch[i].batch_size)));
    y.push_back(std::log(law.per_batch[i].lr.value));
  }
  const Fit f = Ols(x, y);
  law.fitted = true;
  law.c = std::exp(f.log_c);
  law.alpha.value = f.alpha;
  if (fit_idx.size() < 3 || reps == 0) {
    law.alpha.MarkUnavailable("two batch sizes: a line through two points has no interval");
  } else {
    // The bootstrap over seeds and the grid (each batch's replicate), and the fit's residuals
    // (the OLS slope's t interval): the wider of the two on each side.
    std::vector<double> alpha_reps;
    for (size_t r = 0; r < reps; ++r) {
      std::vector<double> yr;
      for (size_t i : fit_idx) yr.push_back(rep_log_lr[i][r]);
      alpha_reps.push_back(Ols(x, yr).alpha);
    }
    const Interval boot = PercentileInterval(f.alpha, alpha_reps, options.confidence);
    const double t = StudentQuantile(1 - (1 - options.confidence) / 2,
                                     static_cast<double>(fit_idx.size()) - 2);
    law.alpha.low = std::min(boot.low, f.alpha - t * f.se);
    law.alpha.high = std::max(boot.high, f.alpha + t * f.se);
    law.alpha.method = "bootstrap over seeds and the LR grid, widened to the fit's residual t interval";
  }
  law.linear_consistent = law.alpha.Contains(1.0);
  law.sqrt_consistent = law.alpha.Contains(0.5);
  const std::string rules =
      !law.alpha.available()
          ? "no interval to compare it with the linear (α = 1) and square-root (α = ½) rules"
          : fmt::format("{} the linear rule (α = 1), {} the square-root rule (α = ½)",
                        law.linear_consistent ? "consistent with" : "not",
                        law.sqrt_consistent ? "consistent with" : "not");
  law.reading = fmt::format(
      "The best LR follows η_opt = {}·B^{}{} over B = {}…{} ({} batch sizes): {}.{}",
      results::FormatNumber(law.c), results::FormatNumber(f.alpha, 3),
      law.alpha.available() ? fmt::format(" (α {} interval [{}, {}])",
                                          results::WholePercent(options.confidence),
                                          results::FormatNumber(law.alpha.low, 3),
                                          results::FormatNumber(law.alpha.high, 3))
                            : "",
      law.per_batch[fit_idx.front()].batch_size, law.per_batch[fit_idx.back()].batch_size,
      fit_idx.size(), rules, peak_text);
  return law;
}

}  // namespace

std::optional<double> LrLaw::LrAt(int64_t batch) const {
  if (!fitted || (peak && batch > peak_batch)) return std::nullopt;
  return c * std::pow(static_cast<double>(batch), alpha.value);
}

std::vector<LrTrial> LrTrialsOf(const std::vector<RunData>& runs,
                                const std::vector<TargetHit>& hits, const Target& target,
                                const std::string& path) {
  std::vector<LrTrial> out;
  for (size_t i = 0; i < runs.size() && i < hits.size(); ++i) {
    const auto it = runs[i].params.find(path);
    if (it == runs[i].params.end()) continue;
    LrTrial t;
    switch (hits[i].status) {
      case HitStatus::kReached:
        t.steps = static_cast<double>(hits[i].step);
        break;
      case HitStatus::kNeverReached:
      case HitStatus::kDiverged:
        t.steps = kInf;
        break;
      case HitStatus::kPruned: {
        // It had not met the target by its last evaluation, so its first hit lies past it: the
        // bound pruning itself sums (docs/spec.md "Pruning"; 0 if it never logged the metric).
        const Series* m = runs[i].Metric(target.metric);
        t.steps = m != nullptr && !m->empty() ? static_cast<double>(m->steps.back() + 1) : 0.0;
        t.censored = true;
        break;
      }
      default:
        continue;  // unfinished, failed, stalled, no metric: no score
    }
    t.others = ConfigKey(runs[i], {"batch_size", "seed", path});
    t.batch_size = runs[i].batch_size;
    t.lr = std::strtod(it->second.c_str(), nullptr);
    t.seed = runs[i].seed;
    if (t.lr > 0) out.push_back(t);
  }
  return out;
}

StatusOr<std::vector<LrLaw>> EstimateLrLaws(const std::vector<LrTrial>& trials,
                                            const LrLawOptions& options) {
  if (trials.empty()) {
    return InvalidArgumentError(
        "no finished run with an LR: the LR law needs runs at several LRs per batch size (an LR "
        "grid such as \"lr.base\": [...], or an lr_search)");
  }
  // others -> batch -> LR -> its seeds
  std::map<std::string, std::map<int64_t, std::map<double, std::vector<SeedSteps>>>> groups;
  for (const LrTrial& t : trials) {
    groups[t.others][t.batch_size][t.lr].push_back({t.steps, t.censored});
  }
  std::vector<LrLaw> out;
  for (const auto& [others, batches] : groups) {
    std::map<int64_t, Grid> grids;
    for (const auto& [batch, lrs] : batches) {
      Grid& g = grids[batch];
      for (const auto& [lr, seeds] : lrs) {
        g.lr.push_back(lr);
        g.log_lr.push_back(std::log(lr));
        g.seeds.push_back(seeds);
      }
    }
    out.push_back(EstimateOne(others, grids, options));
  }
  return out;
}

}  // namespace batchlab::analysis
