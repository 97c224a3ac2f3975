// The critical batch size over training from branch runs (see critical_batch_branched.h).
#include "analysis/estimators/critical_batch_branched.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "results/store.h"
#include "results/table_writer.h"

namespace batchlab::analysis {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double Mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

// The k where the gap, linear in log k between grid points, first passes `tol`; +inf when no k
// exceeds it. `ks` increasing, gaps[0] == 0.
double Crossing(const std::vector<double>& ks, const std::vector<double>& gaps, double tol) {
  for (size_t i = 1; i < ks.size(); ++i) {
    if (gaps[i] > tol) {
      const double g0 = gaps[i - 1], g1 = gaps[i];
      // g0 <= tol < g1 (the earlier ones all passed); g0 may lie below 0 (noise).
      const double t = std::clamp((tol - g0) / (g1 - g0), 0.0, 1.0);
      return std::exp(std::log(ks[i - 1]) + t * (std::log(ks[i]) - std::log(ks[i - 1])));
    }
  }
  return kInf;
}

std::string Batch(double b) { return results::FormatNumber(b); }

// Weighted isotonic (non-decreasing) regression by pool-adjacent-violators (Barlow, Bartholomew,
// Bremner & Brunk 1972, "Statistical Inference under Order Restrictions", ch. 1; Robertson,
// Wright & Dykstra 1988, §1.2), then clipped at 0: the fitted gap of the smallest k is 0 by
// definition, and the bounded isotonic fit is the clipped unbounded one (Robertson et al. §1.6).
// gaps[0] (the reference) is kept at 0; only gaps[1..n) are fitted.
std::vector<double> MonotoneGaps(const std::vector<double>& gaps, const std::vector<double>& w,
                                 size_t n) {
  struct Block {
    double mean, weight;
    size_t count;
  };
  std::vector<Block> blocks;
  for (size_t i = 1; i < n; ++i) {
    blocks.push_back({gaps[i], w[i], 1});
    while (blocks.size() > 1 && blocks[blocks.size() - 2].mean > blocks.back().mean) {
      const Block b = blocks.back();
      blocks.pop_back();
      Block& a = blocks.back();
      const double weight = a.weight + b.weight;
      a.mean = (a.mean * a.weight + b.mean * b.weight) / weight;
      a.weight = weight;
      a.count += b.count;
    }
  }
  std::vector<double> out(n, 0.0);
  size_t i = 1;
  for (const Block& b : blocks) {
    for (size_t j = 0; j < b.count; ++j) out[i++] = std::max(0.0, b.mean);
  }
  return out;
}

double SampleVariance(const std::vector<double>& v) {
  if (v.size() < 2) return std::nan("");
  const double m = Mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / static_cast<double>(v.size() - 1);
}

// The smallest index j whose every value exceeds every value of index 0 by more than `tol`: its
// gap passes ε in every resample, so nothing above it can change the crossing. The fit reads only
// indices <= j (orchestrator/plan/branch_pruning.h prunes exactly the branches above it).
size_t SureExceedance(const std::vector<std::vector<const BranchRun*>>& runs, double tol) {
  auto range = [](const std::vector<const BranchRun*>& rs) {
    double lo = kInf, hi = -kInf;
    for (const BranchRun* r : rs) {
      for (double v : r->last_values) {
        if (!std::isfinite(v)) return std::make_pair(std::nan(""), std::nan(""));
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
    }
    return std::make_pair(lo, hi);
  };
  const double ref_high = range(runs[0]).second;
  for (size_t j = 1; j < runs.size(); ++j) {
    if (range(runs[j]).first - ref_high > tol) return j;
  }
  return runs.size() - 1;
}

}  // namespace

StatusOr<CbsPoint> EstimateCbs(const BranchPointData& point, const CbsOptions& options) {
  // The runs of each k, in increasing k.
  std::map<double, std::vector<const BranchRun*>> by_k;
  for (const BranchRun& r : point.runs) {
    if (r.last_values.empty()) {
      return FailedPreconditionError(fmt::format(
          "branch point at trunk step {}: the branch at k = {} (seed {}) has no evaluation",
          point.at_step, r.multiplier, r.seed));
    }
    by_k[r.multiplier].push_back(&r);
  }
  if (by_k.size() < 2) {
    return FailedPreconditionError(fmt::format(
        "branch point at trunk step {}: {} multiplier(s) finished; the critical batch size needs "
        "at least 2",
        point.at_step, by_k.size()));
  }
  const bool fit = options.method == CbsMethod::kMonotoneFit;
  CbsPoint out;
  out.trunk_id = point.trunk_id;
  out.at_step = point.at_step;
  out.at_samples = point.at_samples;
  out.trunk_batch = point.trunk_batch;
  out.nodes = point.nodes;
  out.lr_factor_by_k = point.lr_factor_by_k;
  const double b0 = static_cast<double>(point.trunk_batch);
  std::vector<double> ks;
  std::vector<std::vector<const BranchRun*>> runs;
  for (auto& [k, rs] : by_k) {
    // Seed order, so that index s is the same seed at every k when the seeds are paired.
    std::sort(rs.begin(), rs.end(),
              [](const BranchRun* a, const BranchRun* b) { return a->seed < b->seed; });
    ks.push_back(k);
    runs.push_back(rs);
  }
  const size_t nk = ks.size();
  // Paired: every k ran the same seeds (2 or more, each once). The runner gives one seed the same
  // rows in the same order at every k (docs/protocol.md, "Branch runs"), so a seed's losses at
  // two k share their data noise; the bootstrap then resamples seeds jointly across k.
  bool paired = fit && runs[0].size() >= 2;
  for (size_t i = 0; paired && i < nk; ++i) {
    paired = runs[i].size() == runs[0].size();
    for (size_t s = 0; paired && s < runs[i].size(); ++s) {
      paired = runs[i][s]->seed == runs[0][s]->seed && (s == 0 || runs[i][s - 1]->seed != runs[i][s]->seed);
    }
  }
  std::vector<std::vector<double>> per_seed(nk);  // each run's smoothed loss
  std::vector<double> means(nk);
  bool multi_seed = true, any_spread = false;
  for (size_t i = 0; i < nk; ++i) {
    for (const BranchRun* r : runs[i]) per_seed[i].push_back(Mean(r->last_values));
    means[i] = Mean(per_seed[i]);
    multi_seed = multi_seed && runs[i].size() >= 2;
    any_spread = any_spread || runs[i].size() >= 2 || runs[i].front()->last_values.size() >= 2;
  }
  out.paired = paired;
  out.bootstrap = multi_seed ? (paired ? "seeds (paired across k) and last evaluations"
                                       : "seeds and last evaluations")
                  : any_spread ? "last evaluations"
                               : "none";
  std::vector<double> gaps(nk);
  for (size_t i = 0; i < nk; ++i) gaps[i] = means[i] - means[0];

  // The monotone fit reads k up to the first one that passes ε in every resample (exact pruning),
  // each gap weighted by its inverse variance (paired: of the per-seed differences; else the sum
  // of the two means' variances); equal weights per seed when a variance is missing or zero.
  size_t n_fit = fit ? SureExceedance(runs, options.tolerance) + 1 : nk;
  std::vector<double> weights(nk, 1.0), variance(nk, std::nan(""));
  bool have_var = multi_seed;
  for (size_t i = 1; i < n_fit && have_var; ++i) {
    if (paired) {
      std::vector<double> d;
      for (size_t s = 0; s < per_seed[i].size(); ++s) d.push_back(per_seed[i][s] - per_seed[0][s]);
      variance[i] = SampleVariance(d) / static_cast<double>(d.size());
    } else {
      variance[i] = SampleVariance(per_seed[i]) / static_cast<double>(per_seed[i].size()) +
                    SampleVariance(per_seed[0]) / static_cast<double>(per_seed[0].size());
    }
    have_var = std::isfinite(variance[i]) && variance[i] > 0;
    weights[i] = have_var ? 1.0 / variance[i] : 0;
  }
  if (!have_var) {
    for (size_t i = 0; i < nk; ++i) weights[i] = static_cast<double>(runs[i].size());
  } else {
    // The fit also ends at the first k whose gap exceeds ε significantly (by z standard errors,
    // z the interval's normal quantile): the gap curve can fall again at larger k (a branch whose
    // LR is past stability), and a monotone fit must not pool those k into the crossing.
    const double z = NormalQuantile(1 - (1 - options.confidence) / 2);
    for (size_t i = 1; i < n_fit; ++i) {
      if (gaps[i] - z * std::sqrt(variance[i]) > options.tolerance) {
        n_fit = i + 1;
        break;
      }
    }
  }
  auto curve = [&](const std::vector<double>& g) {
    if (!fit) return g;
    std::vector<double> c = MonotoneGaps(g, weights, n_fit);
    return c;
  };

  // Bootstrap replicates: every k's seeds resampled (paired: the same draw for every k), and each
  // seed's last values. Each k draws its evaluations from a stream of its own, so the replicates
  // of the smaller k do not depend on which larger k exist: an analysis without branches that
  // could not change it (orchestrator/plan/branch_pruning.h) gives the same interval.
  std::vector<Resampler> streams;
  for (size_t i = 0; i < nk; ++i) {
    streams.emplace_back(options.seed * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL * (i + 1));
  }
  Resampler seed_stream(options.seed * 0x9e3779b97f4a7c15ULL + 0x2545f4914f6cdd1dULL);
  std::vector<std::vector<double>> gap_reps(nk);
  std::vector<double> crossing_reps;
  std::vector<double> rep_means(nk), rep_gaps(nk);
  std::vector<size_t> draw;
  for (int b = 0; b < options.resamples; ++b) {
    if (paired) {
      draw.resize(runs[0].size());
      for (size_t& d : draw) d = seed_stream.Index(runs[0].size());
    }
    for (size_t i = 0; i < nk; ++i) {
      Resampler& rs = streams[i];
      const std::vector<const BranchRun*>& rr = runs[i];
      double sum = 0;
      for (size_t s = 0; s < rr.size(); ++s) {
        const size_t idx = paired ? draw[s] : rr.size() >= 2 ? rs.Index(rr.size()) : 0;
        const BranchRun* r = rr[idx];
        // With seeds, the fit resamples seeds only: a seed's mean already carries its
        // evaluations' noise, and resampling both levels overstates the variance (Davison &
        // Hinkley 1997, "Bootstrap Methods and their Application", §3.8).
        if (fit && rr.size() >= 2) {
          sum += per_seed[i][idx];
          continue;
        }
        double inner = 0;
        for (size_t e = 0; e < r->last_values.size(); ++e) {
          inner += r->last_values[rs.Index(r->last_values.size())];
        }
        sum += inner / static_cast<double>(r->last_values.size());
      }
      rep_means[i] = sum / static_cast<double>(rr.size());
    }
    for (size_t j = 0; j < nk; ++j) {
      rep_gaps[j] = rep_means[j] - rep_means[0];
      gap_reps[j].push_back(rep_gaps[j]);
    }
    crossing_reps.push_back(Crossing(ks, curve(rep_gaps), options.tolerance));
  }
  for (size_t i = 0; i < nk; ++i) {
    CbsPerK pk;
    pk.multiplier = ks[i];
    pk.batch_size = std::llround(ks[i] * b0);
    pk.seeds = static_cast<int>(runs[i].size());
    pk.loss = means[i];
    pk.gap = i == 0 ? Interval{0, 0, 0, options.confidence,
                               "the reference batch: gap 0 by definition", ""}
                    : PercentileInterval(gaps[i], gap_reps[i], options.confidence);
    out.per_k.push_back(pk);
  }
  // Merrill's rule: the largest k whose gap, and every smaller k's, is within ε.
  size_t last_ok = 0;
  while (last_ok + 1 < nk && gaps[last_ok + 1] <= options.tolerance) ++last_ok;
  out.merrill_batch = out.per_k[last_ok].batch_size;
  out.merrill_censored = last_ok + 1 == nk;

  const double k_max = ks.back();
  out.fitted_gap = curve(gaps);
  const double crossing = Crossing(ks, out.fitted_gap, options.tolerance);
  Interval ci = PercentileInterval(crossing, crossing_reps, options.confidence);
  out.interval_available = any_spread;
  out.censored = !std::isfinite(crossing);
  out.high_open = !std::isfinite(ci.high);
  out.b_crit.confidence = options.confidence;
  out.b_crit.value = (out.censored ? k_max : crossing) * b0;
  out.b_crit.low = (std::isfinite(ci.low) ? ci.low : k_max) * b0;
  out.b_crit.high = (std::isfinite(ci.high) ? ci.high : k_max) * b0;

  const std::string where =
      point.nodes == 0
          ? fmt::format("After {} trunk samples", point.at_samples)
          : fmt::format("After {} trunk samples, branching at {} nodes", point.at_samples,
                        point.nodes);
  if (!out.interval_available) {
    // One value per k: nothing to resample; an interval would have zero width.
    out.b_crit.low = out.b_crit.high = std::nan("");
    out.high_open = false;
  }
  if (out.censored) {
    out.reading = fmt::format(
        "{}, even the largest branch batch {} recovered the smallest's loss within {}: the "
        "critical batch size is at least {} (censored; add larger multipliers to measure it).",
        where, Batch(k_max * b0), options.tolerance, Batch(k_max * b0));
  } else {
    out.reading = fmt::format(
        "{}, batches up to about {} ({} x B0) train as well per sample as {} (loss gap within "
        "{}); {}",
        where, Batch(out.b_crit.value), results::ProseNumber(crossing), Batch(ks[0] * b0),
        options.tolerance,
        out.interval_available
            ? fmt::format("the critical batch size lies in [{}, {}{}] at {} confidence.",
                          Batch(out.b_crit.low), out.high_open ? "≥ " : "", Batch(out.b_crit.high),
                          results::WholePercent(options.confidence))
            : "no interval: one branch and one evaluation per k (add seeds).");
  }
  return out;
}

std::vector<BranchPointData> BranchPointsOf(const SweepData& sweep, const std::string& metric,
                                            int smooth) {
  std::map<std::tuple<std::string, int64_t, int64_t>, BranchPointData> points;
  std::map<std::string, int> trunk_nodes;  // run id -> nodes
  for (const RunData& r : sweep.runs) trunk_nodes[r.id] = r.nodes;
  for (const RunData& r : sweep.runs) {
    auto trunk = r.params.find("branch.trunk_run_id");
    auto step = r.params.find("branch.at_step");
    auto k = r.params.find("branch.multiplier");
    if (trunk == r.params.end() || step == r.params.end() || k == r.params.end()) continue;
    // A branch counts when it trained its whole budget (or met its target): not diverged, pruned.
    const StatusOr<results::RunState> state = results::ParseRunState(r.state);
    if (!state.ok() || (*state != results::RunState::kCompleted &&
                        *state != results::RunState::kBudgetExhausted &&
                        *state != results::RunState::kTargetReached)) {
      continue;
    }
    const Series* s = r.Metric(metric);
    if (s == nullptr || s->empty()) continue;
    const std::string id = nlohmann::json::parse(trunk->second).get<std::string>();
    const int64_t at = std::stoll(step->second);
    // A branch at another node count than its trunk's (branch.nodes): a point of its own.
    const auto tn = trunk_nodes.find(id);
    const int64_t nodes = tn != trunk_nodes.end() && tn->second != r.nodes ? r.nodes : 0;
    BranchPointData& p = points[{id, at, nodes}];
    p.trunk_id = id;
    p.at_step = at;
    p.nodes = nodes;
    if (auto a = r.params.find("branch.at_samples"); a != r.params.end()) {
      p.at_samples = std::stoll(a->second);
    }
    if (auto b = r.params.find("branch.trunk_batch_size"); b != r.params.end()) {
      p.trunk_batch = std::stoll(b->second);
    }
    BranchRun run;
    run.multiplier = std::stod(k->second);
    run.seed = r.seed;
    if (auto f = r.params.find("branch.lr_factor"); f != r.params.end()) {
      run.lr_factor = std::stod(f->second);
    }
    const size_t n = std::min<size_t>(static_cast<size_t>(std::max(1, smooth)), s->size());
    run.last_values.assign(s->values.end() - static_cast<std::ptrdiff_t>(n), s->values.end());
    p.runs.push_back(std::move(run));
  }
  std::vector<BranchPointData> out;
  for (auto& [key, p] : points) {
    ChooseBranchLr(&p);
    out.push_back(std::move(p));
  }
  std::sort(out.begin(), out.end(), [](const BranchPointData& a, const BranchPointData& b) {
    return std::tie(a.trunk_id, a.at_samples, a.nodes) <
           std::tie(b.trunk_id, b.at_samples, b.nodes);
  });
  return out;
}

void ChooseBranchLr(BranchPointData* point) {
  // k -> factor -> (sum of the runs' smoothed losses, runs)
  std::map<double, std::map<double, std::pair<double, int>>> by_k;
  for (const BranchRun& r : point->runs) {
    auto& cell = by_k[r.multiplier][r.lr_factor];
    cell.first += Mean(r.last_values);
    ++cell.second;
  }
  bool search = false;
  for (const auto& [k, factors] : by_k) search = search || factors.size() > 1;
  if (!search) return;
  for (const auto& [k, factors] : by_k) {
    double best = factors.begin()->first, best_loss = std::numeric_limits<double>::infinity();
    for (const auto& [factor, cell] : factors) {
      const double loss = cell.first / cell.second;
      if (loss < best_loss) {
        best_loss = loss;
        best = factor;
      }
    }
    point->lr_factor_by_k[k] = best;
  }
  std::vector<BranchRun> kept;
  for (BranchRun& r : point->runs) {
    if (point->lr_factor_by_k[r.multiplier] == r.lr_factor) kept.push_back(std::move(r));
  }
  point->runs = std::move(kept);
}

run_values::BatchSchedule ToRunSchedule(const BatchSchedule& s) {
  run_values::BatchSchedule r;
  r.first_batch = s.batches.empty() ? 0 : s.batches.front();
  r.at_samples.assign(s.from_samples.begin() + (s.from_samples.empty() ? 0 : 1), s.from_samples.end());
  r.batch_sizes.assign(s.batches.begin() + (s.batches.empty() ? 0 : 1), s.batches.end());
  return r;
}

BatchSchedule RecommendSchedule(const std::vector<CbsPoint>& points, int64_t b0,
                                int64_t total_samples, double margin) {
  BatchSchedule s;
  s.total_samples = total_samples;
  s.from_samples.push_back(0);
  s.batches.push_back(b0);
  for (const CbsPoint& p : points) {
    if (p.at_samples >= total_samples) break;
    const double allowed = p.b_crit.low / std::max(1.0, margin);
    int64_t batch = s.batches.back();
    while (static_cast<double>(batch * 2) <= allowed) batch *= 2;
    if (batch > s.batches.back()) {
      // Switch at a whole step of the batch before it.
      const int64_t prev = s.batches.back();
      const int64_t at = (p.at_samples + prev - 1) / prev * prev;
      if (at > s.from_samples.back() && at < total_samples) {
        s.from_samples.push_back(at);
        s.batches.push_back(batch);
      }
    }
  }
  // Steps as the runner takes them (base/run_values.h: a switch at the first step that begins
  // with at least from_samples seen).
  s.steps = ToRunSchedule(s).StepsFor(total_samples);
  s.constant_steps = (total_samples + b0 - 1) / b0;
  s.saving = s.constant_steps > 0
                 ? 1.0 - static_cast<double>(s.steps) / static_cast<double>(s.constant_steps)
                 : 0;
  return s;
}

}  // namespace batchlab::analysis
