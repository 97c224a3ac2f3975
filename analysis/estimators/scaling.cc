// Scaling efficiency and the ring-allreduce α–β fit (see scaling.h, docs/methods.md §5).
#include "analysis/estimators/scaling.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <thread>
#include <utility>

#include <fmt/core.h>

#include "analysis/data/table.h"

namespace batchlab::analysis {

namespace {

// Swept values that do not change the time of a training step: runs that differ only in them
// share a throughput configuration (evaluation is outside step_seconds; the budget, target and
// checkpoints only decide when a run stops).
const std::vector<std::string> kNotThroughput = {"nodes",   "ranks_per_node", "world_size",
                                                 "seed",    "lr.",            "eval.",
                                                 "budget.", "target.",        "checkpoint."};

double MeanAfter(const Series& s, int64_t skip_steps, int64_t* count) {
  double sum = 0;
  int64_t n = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.steps[i] <= skip_steps || !std::isfinite(s.values[i])) continue;
    sum += s.values[i];
    ++n;
  }
  if (count) *count = n;
  return n ? sum / static_cast<double>(n) : 0.0;
}

// This machine's host name ("" if unknown).
std::string ThisHost() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "";
  return buf;
}

// The mean of a run's step_samples in `reps` moving-block bootstrap replicates.
std::vector<double> MeanReplicates(const std::vector<double>& x, int reps, Resampler& rs) {
  std::vector<double> out;
  const size_t n = x.size();
  if (n == 0) return out;
  std::vector<double> prefix(n + 1, 0.0);
  for (size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + x[i];
  size_t block = DefaultBlockLength(n);
  if (block >= n) block = 1;
  const size_t starts = n - block + 1;
  out.reserve(static_cast<size_t>(std::max(reps, 0)));
  for (int r = 0; r < reps; ++r) {
    double sum = 0;
    for (size_t filled = 0; filled < n;) {
      const size_t st = rs.Index(starts);
      const size_t len = std::min(block, n - filled);
      sum += prefix[st + len] - prefix[st];
      filled += len;
    }
    out.push_back(sum / static_cast<double>(n));
  }
  return out;
}

// Mean throughput of `runs` in replicate r: each run's replicate step time, the runs themselves
// resampled when there are several (seed-to-seed variation).
double ReplicateThroughput(const std::vector<const RunTiming*>& runs,
                           const std::vector<std::vector<double>>& reps, size_t r,
                           Resampler& rs) {
  double sum = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const size_t j = runs.size() > 1 ? rs.Index(runs.size()) : i;
    const double t = reps[j].empty() ? runs[j]->step_seconds : reps[j][r];
    sum += static_cast<double>(runs[j]->batch_size) / t;
  }
  return sum / static_cast<double>(runs.size());
}

std::string RunsDiffer(const std::vector<const RunTiming*>& a,
                       const std::vector<const RunTiming*>& b) {
  for (const RunTiming* x : a) {
    for (const RunTiming* y : b) {
      std::string why = ConditionsDiffer(*x, *y);
      if (!why.empty()) return why;
    }
  }
  return "";
}

std::vector<ScalingRow> Scale(const std::vector<RunTiming>& timings, bool strong, int resamples,
                              double confidence, uint64_t seed) {
  // (configuration, global or local batch) -> world size -> runs
  std::map<std::pair<std::string, int64_t>, std::map<int, std::vector<const RunTiming*>>> groups;
  for (const RunTiming& t : timings) {
    const int64_t b = strong ? t.batch_size : t.local_batch_size;
    groups[{strong ? t.strong_key : t.weak_key, b}][t.world_size].push_back(&t);
  }
  std::vector<ScalingRow> rows;
  Resampler rs(seed);
  for (const auto& [key, by_k] : groups) {
    if (by_k.size() < 2) continue;
    // Each run's bootstrap replicates of its mean step time (drawn once per group).
    std::map<const RunTiming*, std::vector<double>> reps;
    for (const auto& [k, runs] : by_k) {
      for (const RunTiming* t : runs) reps[t] = MeanReplicates(t->step_samples, resamples, rs);
    }
    auto reps_of = [&](const std::vector<const RunTiming*>& runs) {
      std::vector<std::vector<double>> out;
      for (const RunTiming* t : runs) out.push_back(reps[t]);
      return out;
    };
    const int first_k = by_k.begin()->first;
    for (const auto& [k, runs] : by_k) {
      ScalingRow r;
      r.kind = strong ? "strong" : "weak";
      r.group = strong ? fmt::format("B={}", key.second) : fmt::format("b_local={}", key.second);
      r.config_key = key.first;
      r.world_size = k;
      r.runs = static_cast<int>(runs.size());
      r.nodes = runs.front()->nodes;
      for (const RunTiming* t : runs) {
        r.throughput += t->throughput;
        r.comm_fraction += t->comm_fraction;
        r.load += t->load;
      }
      r.throughput /= r.runs;
      r.comm_fraction /= r.runs;
      r.load /= r.runs;
      // The baseline: the smallest world size (up to this one) that ran under the same
      // conditions as this one.
      const std::vector<const RunTiming*>* base = nullptr;
      int base_k = 0;
      std::string why_not;
      for (const auto& [k0, runs0] : by_k) {
        // A smaller world size, or the group's smallest (its own baseline).
        if (k0 >= k && !(k0 == k && k == first_k)) break;
        const std::string why = RunsDiffer(runs0, runs);
        if (why.empty()) {
          base = &runs0;
          base_k = k0;
          break;
        }
        if (why_not.empty()) why_not = fmt::format("K={} vs K={}: {}", k0, k, why);
      }
      auto mean_x = [](const std::vector<const RunTiming*>& v) {
        double x = 0;
        for (const RunTiming* t : v) x += t->throughput;
        return x / static_cast<double>(v.size());
      };
      if (base == nullptr) {
        // No comparable baseline: the efficiency against the group's smallest K is kept for
        // reference but is not a result.
        const double x0 = mean_x(by_k.begin()->second);
        r.speedup = x0 > 0 ? r.throughput / x0 : 0;
        r.efficiency = r.speedup / (static_cast<double>(k) / first_k);
        r.incomparable = why_not;
        r.efficiency_interval.value = r.efficiency;
        r.efficiency_interval.confidence = confidence;
        r.efficiency_interval.MarkUnavailable("no baseline ran under the same conditions (" +
                                              why_not + ")");
        rows.push_back(r);
        continue;
      }
      r.base_world_size = base_k;
      const double x0 = mean_x(*base);
      r.speedup = x0 > 0 ? r.throughput / x0 : 0;
      const double ratio = static_cast<double>(k) / base_k;
      r.efficiency = r.speedup / ratio;
      Interval& iv = r.efficiency_interval;
      if (base_k == k) {
        iv.value = 1;
        iv.low = iv.high = 1;
        iv.confidence = confidence;
        iv.method = "the baseline itself";
        rows.push_back(r);
        continue;
      }
      const std::vector<std::vector<double>> rk = reps_of(runs), r0 = reps_of(*base);
      std::vector<double> eff;
      for (int i = 0; i < resamples; ++i) {
        const double xk = ReplicateThroughput(runs, rk, static_cast<size_t>(i), rs);
        const double xb = ReplicateThroughput(*base, r0, static_cast<size_t>(i), rs);
        if (xb > 0) eff.push_back(xk / xb / ratio);
      }
      iv = PercentileInterval(r.efficiency, std::move(eff), confidence);
      iv.method = fmt::format(
          "percentile bootstrap of the step-time distributions (moving blocks over each run's "
          "steps{}), K={} against K={} under the same conditions",
          runs.size() > 1 || base->size() > 1 ? ", and over the runs" : "", k, base_k);
      if (!(iv.high > iv.low)) {
        iv.MarkUnavailable("the step times show no spread (one step per run?): run more steps");
      }
      r.above_possible = iv.available() && iv.low > 1.0;
      rows.push_back(r);
    }
  }
  return rows;
}

// Mean ranks running on each run's host while it ran (its own included), from the recorded
// start and end times; 0 where they are not recorded.
std::vector<double> Loads(const std::vector<RunData>& runs) {
  std::vector<double> out(runs.size(), 0.0);
  std::vector<size_t> order;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].started_at > 0 && runs[i].ended_at > runs[i].started_at) order.push_back(i);
  }
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return runs[a].started_at < runs[b].started_at; });
  for (size_t i : order) {
    const RunData& r = runs[i];
    const double dur = r.ended_at - r.started_at;
    double ranks = 0;
    for (size_t j : order) {
      const RunData& q = runs[j];
      if (q.started_at >= r.ended_at) break;
      if (q.ended_at <= r.started_at || q.host != r.host) continue;
      const double overlap = std::min(q.ended_at, r.ended_at) - std::max(q.started_at, r.started_at);
      ranks += q.world_size * overlap / dur;
    }
    out[i] = ranks;
  }
  return out;
}

}  // namespace

std::vector<RunTiming> RunTimings(const std::vector<RunData>& runs, int64_t skip_steps,
                                  int resamples, double confidence, uint64_t seed) {
  std::vector<RunTiming> out;
  const std::vector<double> loads = Loads(runs);
  Resampler rs(seed);
  for (size_t ri = 0; ri < runs.size(); ++ri) {
    const RunData& run = runs[ri];
    const Series* step = run.Metric("step_seconds");
    if (!step) continue;
    RunTiming t;
    t.step_seconds = MeanAfter(*step, skip_steps, &t.steps);
    if (t.steps == 0 || !(t.step_seconds > 0)) continue;
    for (size_t i = 0; i < step->size(); ++i) {
      if (step->steps[i] > skip_steps && std::isfinite(step->values[i])) {
        t.step_samples.push_back(step->values[i]);
      }
    }
    t.step_interval = PercentileInterval(
        t.step_seconds, MeanReplicates(t.step_samples, resamples, rs), confidence);
    t.step_interval.method = "percentile moving-block bootstrap over the run's steps";
    if (!(t.step_interval.high > t.step_interval.low)) {
      t.step_interval.MarkUnavailable("the step times show no spread");
    }
    t.host = run.host;
    t.load = loads[ri];
    if (const Series* c = run.Metric("cpus"); c && !c->empty()) {
      t.cpus = static_cast<int>(c->values.front());
    } else if (!t.host.empty() && t.host == ThisHost()) {
      t.cpus = static_cast<int>(std::thread::hardware_concurrency());  // ran here
    }
    if (const Series* l = run.Metric("load_avg"); l && !l->empty()) t.load_avg = l->values.front();
    t.run_id = run.id;
    t.label = RunLabel(run);
    std::vector<std::string> drop = kNotThroughput;
    drop.push_back("batch_size");  // the group's batch size is held separately
    t.strong_key = ConfigKey(run, drop);
    t.weak_key = t.strong_key;
    t.world_size = run.world_size;
    t.nodes = run.nodes;
    t.batch_size = run.batch_size;
    t.local_batch_size = run.local_batch_size > 0 ? run.local_batch_size
                                                  : run.batch_size / std::max(1, run.world_size);
    t.parameters = run.parameters;
    if (const Series* comm = run.Metric("comm_seconds")) {
      t.comm_seconds = MeanAfter(*comm, skip_steps, nullptr);
    }
    t.throughput = static_cast<double>(t.batch_size) / t.step_seconds;
    t.comm_fraction = t.comm_seconds / t.step_seconds;
    if (t.world_size > 1 && t.parameters > 0 && t.comm_seconds > 0) {
      const double k = t.world_size;
      t.bus_bandwidth = GradientBytes(t.parameters) / t.comm_seconds * 2.0 * (k - 1) / k;
    }
    out.push_back(std::move(t));
  }
  return out;
}

std::string ConditionsDiffer(const RunTiming& a, const RunTiming& b) {
  if (!a.host.empty() && !b.host.empty() && a.host != b.host) {
    return fmt::format("hosts {} and {}", a.host, b.host);
  }
  if (!(a.load > 0 && b.load > 0)) return "";  // not recorded: nothing to tell them apart by
  const auto close = [](double x, double y) {
    return std::max(x, y) <= 1.25 * std::min(x, y);
  };
  if (a.cpus > 0 && b.cpus > 0) {
    // Every rank had a core of its own in both, or neither did (then with similar crowding).
    const bool over_a = a.load > a.cpus + 0.25, over_b = b.load > b.cpus + 0.25;
    if (over_a != over_b) {
      return fmt::format("one oversubscribed ({} ranks on {} cores) and one not ({} on {})",
                         FormatNumber(over_a ? a.load : b.load, 3), over_a ? a.cpus : b.cpus,
                         FormatNumber(over_a ? b.load : a.load, 3), over_a ? b.cpus : a.cpus);
    }
    if (over_a && !close(a.load, b.load)) {
      return fmt::format("both oversubscribed, with loads of {} and {} ranks on the host",
                         FormatNumber(a.load, 3), FormatNumber(b.load, 3));
    }
    return "";
  }
  // Cores unknown: the other runs' ranks on the host while each ran must agree (within half a
  // rank).
  const double others_a = a.load - a.world_size, others_b = b.load - b.world_size;
  if (std::fabs(others_a - others_b) > 0.5) {
    return fmt::format("loads of {} and {} ranks on the host ({} and {} from other runs)",
                       FormatNumber(a.load, 3), FormatNumber(b.load, 3),
                       FormatNumber(std::max(0.0, others_a), 3),
                       FormatNumber(std::max(0.0, others_b), 3));
  }
  return "";
}

std::string TimingsDiffer(const std::vector<RunTiming>& timings, const std::string& run_a,
                          const std::string& run_b) {
  const RunTiming* a = nullptr;
  const RunTiming* b = nullptr;
  for (const RunTiming& t : timings) {
    if (t.run_id == run_a) a = &t;
    if (t.run_id == run_b) b = &t;
  }
  return a && b ? ConditionsDiffer(*a, *b) : "";
}

std::vector<ScalingRow> StrongScaling(const std::vector<RunTiming>& timings, int resamples,
                                      double confidence, uint64_t seed) {
  return Scale(timings, true, resamples, confidence, seed);
}

std::vector<ScalingRow> WeakScaling(const std::vector<RunTiming>& timings, int resamples,
                                    double confidence, uint64_t seed) {
  return Scale(timings, false, resamples, confidence, seed);
}

double GradientBytes(int64_t parameters) { return 4.0 * static_cast<double>(parameters); }

double RingAllreduceSeconds(int world_size, double bytes, double alpha, double bandwidth) {
  if (world_size <= 1) return 0;
  const double k = world_size;
  return 2.0 * (k - 1) * alpha + 2.0 * (k - 1) / k * bytes / bandwidth;
}

StatusOr<AlphaBetaFit> FitRingAllreduce(const std::vector<AllreduceObservation>& obs) {
  // t = α·x1 + γ·x2 with x1 = 2(K−1), x2 = 2(K−1)/K · n, γ = 1/β.
  double s11 = 0, s12 = 0, s22 = 0, s1t = 0, s2t = 0;
  std::set<std::pair<int, double>> designs;
  bool one_host = true;
  std::vector<std::pair<double, double>> x;
  std::vector<double> t;
  for (const AllreduceObservation& o : obs) {
    if (o.world_size < 2 || !(o.bytes > 0) || !(o.seconds >= 0) || !std::isfinite(o.seconds)) {
      continue;
    }
    const double k = o.world_size;
    const double x1 = 2.0 * (k - 1), x2 = 2.0 * (k - 1) / k * o.bytes;
    s11 += x1 * x1;
    s12 += x1 * x2;
    s22 += x2 * x2;
    s1t += x1 * o.seconds;
    s2t += x2 * o.seconds;
    designs.insert({o.world_size, o.bytes});
    one_host = one_host && o.nodes <= 1;
    x.push_back({x1, x2});
    t.push_back(o.seconds);
  }
  if (designs.size() < 2) {
    return FailedPreconditionError(fmt::format(
        "the alpha-beta fit needs multi-rank runs at >= 2 distinct (world size, model size) "
        "pairs to separate latency from bandwidth, got {}; sweep more node counts",
        designs.size()));
  }
  double alpha = 0, gamma = 0;
  const double det = s11 * s22 - s12 * s12;
  if (std::fabs(det) > 1e-30 * s11 * s22) {
    alpha = (s22 * s1t - s12 * s2t) / det;
    gamma = (s11 * s2t - s12 * s1t) / det;
  } else {
    alpha = gamma = -1;  // collinear designs: fall through to the one-term fits
  }
  const bool alpha_negative = alpha < 0;
  if (alpha < 0 || gamma < 0) {
    // The constrained optimum lies on an edge: the better of the two one-term fits.
    const double a_only = std::max(0.0, s1t / s11), g_only = std::max(0.0, s2t / s22);
    double ra = 0, rg = 0;
    for (size_t i = 0; i < t.size(); ++i) {
      ra += std::pow(t[i] - a_only * x[i].first, 2);
      rg += std::pow(t[i] - g_only * x[i].second, 2);
    }
    if (ra <= rg) {
      alpha = a_only;
      gamma = 0;
    } else {
      alpha = 0;
      gamma = g_only;
    }
  }
  AlphaBetaFit fit;
  fit.alpha_seconds = alpha;
  fit.bandwidth_bytes_per_second =
      gamma > 0 ? 1.0 / gamma : std::numeric_limits<double>::infinity();
  fit.observations = static_cast<int>(t.size());
  fit.designs = static_cast<int>(designs.size());
  double ss = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    ss += std::pow(t[i] - alpha * x[i].first - gamma * x[i].second, 2);
  }
  fit.rms_residual_seconds = std::sqrt(ss / static_cast<double>(t.size()));
  fit.alpha_at_bound = alpha_negative && alpha == 0;
  fit.one_host = one_host;
  fit.undetermined = AlphaBetaUndetermined(fit);
  return fit;
}

StatusOr<AlphaBetaFit> FitRingAllreduceOrBandwidth(const std::vector<AllreduceObservation>& obs) {
  StatusOr<AlphaBetaFit> full = FitRingAllreduce(obs);
  if (full.ok()) return full;
  // One design: t = γ · 2(K−1)/K · n, least squares through the origin.
  double sxx = 0, sxt = 0;
  int n = 0;
  std::set<std::pair<int, double>> designs;
  std::vector<std::pair<double, double>> xt;
  bool one_host = true;
  for (const AllreduceObservation& o : obs) {
    if (o.world_size < 2 || !(o.bytes > 0) || !(o.seconds >= 0) || !std::isfinite(o.seconds)) {
      continue;
    }
    const double k = o.world_size, x = 2.0 * (k - 1) / k * o.bytes;
    sxx += x * x;
    sxt += x * o.seconds;
    xt.push_back({x, o.seconds});
    designs.insert({o.world_size, o.bytes});
    one_host = one_host && o.nodes <= 1;
    ++n;
  }
  if (n == 0) {
    return FailedPreconditionError(
        "no multi-rank run logged comm_seconds with a known model size: nothing to fit the "
        "allreduce cost to; sweep 2 or more ranks (nodes) and make sure the program logs "
        "comm_seconds (the runner and the Python client's DDP hook do) and its parameters");
  }
  AlphaBetaFit fit;
  const double gamma = std::max(0.0, sxt / sxx);
  fit.alpha_seconds = 0;
  fit.bandwidth_bytes_per_second =
      gamma > 0 ? 1.0 / gamma : std::numeric_limits<double>::infinity();
  fit.observations = n;
  fit.designs = static_cast<int>(designs.size());
  fit.separated = false;
  fit.one_host = one_host;
  double ss = 0;
  for (const auto& [x, t] : xt) ss += std::pow(t - gamma * x, 2);
  fit.rms_residual_seconds = std::sqrt(ss / n);
  fit.undetermined = AlphaBetaUndetermined(fit);
  return fit;
}

std::string AlphaBetaUndetermined(const AlphaBetaFit& fit) {
  if (fit.observations < 2) {
    return "one multi-rank run: the fit passes through its single point, so nothing tests it; "
           "sweep more seeds or node counts";
  }
  if (!(fit.bandwidth_bytes_per_second < std::numeric_limits<double>::infinity())) {
    return "the comm times do not grow with the message size, so the bandwidth term fitted to "
           "0 (beta infinite); sweep models of different sizes or more node counts";
  }
  if (fit.one_host && fit.bandwidth_bytes_per_second < kMinOneHostBandwidth) {
    return fmt::format(
        "beta = {} GB/s is below {} GB/s, slower than shared memory or loopback between ranks on "
        "one host can be: the logged comm_seconds include waiting for a slower rank "
        "(oversubscribed cores, uneven load), not transfer alone",
        ProseNumber(fit.bandwidth_bytes_per_second / 1e9), ProseNumber(kMinOneHostBandwidth / 1e9));
  }
  if (fit.bandwidth_bytes_per_second < kMinNetworkBandwidth) {
    return fmt::format(
        "beta = {} GB/s is below 100 Mb/s Fast Ethernet ({} GB/s), the slowest link between hosts: "
        "the logged comm_seconds include waiting for a slower rank, not transfer alone",
        ProseNumber(fit.bandwidth_bytes_per_second / 1e9), ProseNumber(kMinNetworkBandwidth / 1e9));
  }
  if (fit.alpha_seconds > kMaxPlausibleAlpha) {
    return fmt::format(
        "alpha = {} s per ring step is above {} s (kernel TCP round trips take ~25 us): the "
        "logged comm_seconds include waiting, not latency alone",
        ProseNumber(fit.alpha_seconds), ProseNumber(kMaxPlausibleAlpha));
  }
  if (fit.alpha_at_bound) {
    return "the unconstrained fit gave alpha < 0 (clamped to 0): the designs do not separate "
           "latency from bandwidth; sweep node counts further apart";
  }
  return "";
}

std::vector<AllreduceObservation> AllreduceObservationsOf(const std::vector<RunTiming>& timings) {
  std::vector<AllreduceObservation> out;
  for (const RunTiming& t : timings) {
    if (t.world_size < 2 || t.parameters <= 0 || !(t.comm_seconds > 0)) continue;
    out.push_back({t.world_size, GradientBytes(t.parameters), t.comm_seconds, t.nodes});
  }
  return out;
}

}  // namespace batchlab::analysis
