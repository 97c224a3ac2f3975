// Scaling efficiency and the ring-allreduce α–β fit (see scaling.h, docs/methods.md §5).
#include "analysis/scaling.h"

#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include <fmt/core.h>

namespace batchlab::analysis {

namespace {

const std::vector<std::string> kNotThroughput = {"nodes", "ranks_per_node", "world_size", "seed",
                                                 "lr."};

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

std::vector<ScalingRow> Scale(const std::vector<RunTiming>& timings, bool strong) {
  // (configuration, global or local batch) -> world size -> runs
  std::map<std::pair<std::string, int64_t>, std::map<int, std::vector<const RunTiming*>>> groups;
  for (const RunTiming& t : timings) {
    const int64_t b = strong ? t.batch_size : t.local_batch_size;
    groups[{strong ? t.strong_key : t.weak_key, b}][t.world_size].push_back(&t);
  }
  std::vector<ScalingRow> rows;
  for (const auto& [key, by_k] : groups) {
    if (by_k.size() < 2) continue;
    double base_x = 0;
    int base_k = 0;
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
      }
      r.throughput /= r.runs;
      r.comm_fraction /= r.runs;
      if (base_k == 0) {
        base_k = k;
        base_x = r.throughput;
      }
      r.speedup = base_x > 0 ? r.throughput / base_x : 0;
      r.efficiency = r.speedup / (static_cast<double>(k) / base_k);
      rows.push_back(r);
    }
  }
  return rows;
}

}  // namespace

std::vector<RunTiming> RunTimings(const std::vector<RunData>& runs, int64_t skip_steps) {
  std::vector<RunTiming> out;
  for (const RunData& run : runs) {
    const Series* step = run.Metric("step_seconds");
    if (!step) continue;
    RunTiming t;
    t.step_seconds = MeanAfter(*step, skip_steps, &t.steps);
    if (t.steps == 0 || !(t.step_seconds > 0)) continue;
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

std::vector<ScalingRow> StrongScaling(const std::vector<RunTiming>& timings) {
  return Scale(timings, true);
}

std::vector<ScalingRow> WeakScaling(const std::vector<RunTiming>& timings) {
  return Scale(timings, false);
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
  double ss = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    ss += std::pow(t[i] - alpha * x[i].first - gamma * x[i].second, 2);
  }
  fit.rms_residual_seconds = std::sqrt(ss / static_cast<double>(t.size()));
  return fit;
}

std::vector<AllreduceObservation> AllreduceObservationsOf(const std::vector<RunTiming>& timings) {
  std::vector<AllreduceObservation> out;
  for (const RunTiming& t : timings) {
    if (t.world_size < 2 || t.parameters <= 0 || !(t.comm_seconds > 0)) continue;
    out.push_back({t.world_size, GradientBytes(t.parameters), t.comm_seconds});
  }
  return out;
}

}  // namespace batchlab::analysis
