// The analyses of a loaded sweep, section by section (see study.h).
#include "analysis/study.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <tuple>

#include <fmt/core.h>
#include <fmt/format.h>

#include "results/table_writer.h"

namespace batchlab::analysis {

StatusOr<Target> ResolveTarget(const SweepData& sweep, const StudyOptions& options) {
  if (!options.target.empty()) return ParseTarget(options.target);
  if (!sweep.target.empty()) return ParseTarget(sweep.target);
  return InvalidArgumentError(fmt::format(
      "sweep '{}' sets no target in its runs' configs; pass --target METRIC OP VALUE, e.g. "
      "--target 'test_accuracy>=0.85'",
      sweep.name));
}

Status CheckTargetMetric(const SweepData& sweep, const Target& target) {
  std::set<std::string> logged;
  for (const RunData& r : sweep.runs) {
    for (const auto& [name, series] : r.metrics) {
      if (name == target.metric && !series.empty()) return OkStatus();
      const bool bookkeeping = name.rfind("gns_", 0) == 0 || name == "samples" ||
                               name == "seconds" || name == "step_seconds" ||
                               name == "comm_seconds";
      if (!series.empty() && !bookkeeping) logged.insert(name);
    }
  }
  if (logged.empty()) return OkStatus();  // nothing logged yet: nothing to contradict
  return InvalidArgumentError(fmt::format(
      "--target '{}': no run of sweep '{}' logged the metric '{}'; metrics logged: {}; e.g. "
      "--target '{}>=0.8'",
      target.ToString(), sweep.name, target.metric, fmt::join(logged, ", "),
      logged.count("test_accuracy") ? "test_accuracy" : *logged.begin()));
}

std::vector<std::string> TargetRangeWarnings(const SweepData& sweep, const Target& target) {
  std::vector<std::string> out;
  const std::string& m = target.metric;
  const bool up = target.op == CompareOp::kGreaterEqual || target.op == CompareOp::kGreater;
  const bool fraction = m.size() >= 8 && m.compare(m.size() - 8, 8, "accuracy") == 0;
  const bool loss = m.size() >= 4 && m.compare(m.size() - 4, 4, "loss") == 0;
  if (fraction && (target.value > 1 || target.value < 0)) {
    Target percent = target;
    percent.value = target.value / 100;
    out.push_back(fmt::format(
        "--target '{}': {} is a fraction in [0, 1], so no run can meet it{}", target.ToString(), m,
        target.value > 1 && target.value <= 100
            ? fmt::format(" (for {}% write '{}')", target.value, percent.ToString())
            : ""));
  } else if (loss && !up && target.value < 0) {
    out.push_back(fmt::format("--target '{}': {} is never negative, so no run can meet it",
                              target.ToString(), m));
  }
  // The best value any run logged, when none met the target.
  std::optional<double> best;
  std::string best_run;
  for (const RunData& r : sweep.runs) {
    const Series* series = r.Metric(m);
    if (series == nullptr) continue;
    for (double v : series->values) {
      if (!std::isfinite(v)) continue;
      if (target.Met(v)) return out;
      if (!best || (up ? v > *best : v < *best)) {
        best = v;
        best_run = r.id;
      }
    }
  }
  if (best) {
    out.push_back(fmt::format(
        "--target '{}': no run reached it; the best {} observed is {} (run {}){}",
        target.ToString(), m, results::FormatNumber(*best), best_run.substr(0, 16),
        fraction && target.value > 1 ? "" : "; a target within the observed range gives answers"));
  }
  return out;
}

std::pair<int64_t, int64_t> GnsWindow(const StudyOptions& o) {
  if (o.at_step <= 0) return {o.from_step, o.to_step};
  // The tolerance keeps e.g. β = 0.9 at 10 steps despite 1/(1 − 0.9) = 10.000000000000002.
  const auto memory = static_cast<int64_t>(std::ceil(1.0 / (1.0 - o.beta) - 1e-9));
  return {std::max<int64_t>(0, o.at_step - memory + 1), o.at_step};
}

namespace {

// The noise-scale estimate of one run (nullopt when it logged no gns_* metrics).
std::optional<GnsRun> GnsOfRun(const RunData& run, const StudyOptions& options) {
  const std::vector<GnsSample> samples = GnsSamplesOf(run);
  if (samples.empty()) return std::nullopt;
  GnsRun r;
  r.run_id = run.id;
  r.label = RunLabel(run);
  r.config_key = ConfigKey(run, {"seed"});
  r.batch_size = run.batch_size;
  r.world_size = run.world_size;
  GnsOptions g;
  std::tie(g.from_step, g.to_step) = GnsWindow(options);
  g.resamples = options.resamples;
  g.confidence = options.confidence;
  g.seed = options.seed;
  StatusOr<std::vector<GnsPoint>> series = GnsSeries(samples, options.beta);
  if (!series.ok()) {
    r.status = series.status();
    return r;
  }
  r.series = std::move(*series);
  for (const GnsPoint& p : r.series) {
    if (p.step > g.to_step) break;
    r.smoothed_end = p;
  }
  StatusOr<GnsEstimate> est = EstimateGns(samples, g);
  if (est.ok()) {
    r.estimate = *est;
  } else {
    r.status = est.status();
  }
  return r;
}

}  // namespace

GnsSection AnalyzeGns(const SweepData& sweep, const StudyOptions& options) {
  // Runs are independent: the bootstraps of a large sweep are spread over the cores. Each run's
  // bootstrap is seeded by options.seed alone, so results do not depend on the thread count.
  const size_t n = sweep.runs.size();
  std::vector<std::optional<GnsRun>> per_run(n);
  const size_t threads =
      std::max<size_t>(1, std::min<size_t>(std::thread::hardware_concurrency(), n / 64));
  std::vector<std::thread> pool;
  for (size_t t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (size_t i = t; i < n; i += threads) per_run[i] = GnsOfRun(sweep.runs[i], options);
    });
  }
  for (std::thread& th : pool) th.join();

  GnsSection out;
  std::map<std::string, std::vector<double>> by_config;
  std::map<std::string, std::string> labels;
  std::vector<double> values;
  for (std::optional<GnsRun>& r : per_run) {
    if (!r) continue;
    if (r->status.ok()) {
      values.push_back(r->estimate.b_simple.value);
      by_config[r->config_key].push_back(r->estimate.b_simple.value);
      labels[r->config_key] = r->label;
    }
    out.runs.push_back(std::move(*r));
  }
  for (const auto& [key, v] : by_config) {
    if (v.size() >= 2) out.seeds.push_back({key, labels[key], SpreadAcrossSeeds(v)});
  }
  if (!values.empty()) {
    out.min = *std::min_element(values.begin(), values.end());
    out.max = *std::max_element(values.begin(), values.end());
    out.median = Quantile(values, 0.5);
  }
  return out;
}

StatusOr<TargetSection> AnalyzeTarget(const SweepData& sweep, const StudyOptions& options) {
  TargetSection out;
  BATCHLAB_ASSIGN_OR_RETURN(out.target, ResolveTarget(sweep, options));
  if (!options.target.empty()) BATCHLAB_RETURN_IF_ERROR(CheckTargetMetric(sweep, out.target));
  out.hits = FindTargetHits(sweep.runs, out.target);
  out.warnings = TargetRangeWarnings(sweep, out.target);
  out.best = BestPerBatchSize(out.hits);
  out.compute = ChooseComputeBasis(out.hits);
  out.lr_search_path = sweep.lr_search_path;
  if (!out.lr_search_path.empty()) {
    out.lr_found = LrFoundPerGroup(sweep.runs, out.hits, out.lr_search_path);
  }
  return out;
}

std::optional<double> TokensPerSequence(const SweepData& sweep) {
  std::optional<double> per;
  for (const RunData& r : sweep.runs) {
    if (r.metrics.empty() && r.tokens_per_step == 0) continue;  // never started: no facts yet
    if (r.tokens_per_step <= 0 || r.batch_size <= 0) return std::nullopt;
    const double t = static_cast<double>(r.tokens_per_step) / static_cast<double>(r.batch_size);
    if (per && *per != t) return std::nullopt;
    per = t;
  }
  return per;
}

CritSection AnalyzeCrit(const TargetSection& target, const GnsSection& gns,
                        const StudyOptions& options) {
  CritSection out;
  CritOptions c;
  c.resamples = options.resamples;
  c.confidence = options.confidence;
  c.seed = options.seed;
  StatusOr<CritFit> fit = FitCriticalBatch(StepsPointsOf(target.best), c);
  out.b_simple = gns.median;
  if (!fit.ok()) {
    out.status = fit.status().WithContext(
        fmt::format("critical batch size for target {}", target.target.ToString()));
    return out;
  }
  out.fit = *fit;
  for (const BatchBest& b : target.best) {
    out.regions.push_back(
        {b.batch_size, RegionOf(static_cast<double>(b.batch_size), out.fit.b_crit.value)});
  }
  if (out.b_simple) out.b_simple_ratio = *out.b_simple / out.fit.b_crit.value;
  return out;
}

ParetoSection AnalyzePareto(const TargetSection& target) {
  ParetoSection out;
  out.compute = target.compute;
  for (const TargetHit& h : target.hits) {
    if (h.status != HitStatus::kReached) continue;
    out.points.push_back({h.run_id, h.label, h.seconds, ComputeIn(h, out.compute.unit)});
    out.hits.push_back(&h);
  }
  out.frontier = ParetoFrontier(out.points);
  return out;
}

ScalingSection AnalyzeScaling(const SweepData& sweep, const StudyOptions& options) {
  ScalingSection out;
  out.timings = RunTimings(sweep.runs, options.skip_steps, options.resamples, options.confidence,
                           options.seed);
  if (options.parameters > 0) {
    for (RunTiming& t : out.timings) t.parameters = options.parameters;
  }
  out.strong = StrongScaling(out.timings, options.resamples, options.confidence, options.seed);
  out.weak = WeakScaling(out.timings, options.resamples, options.confidence, options.seed);
  StatusOr<AlphaBetaFit> ab = FitRingAllreduceOrBandwidth(AllreduceObservationsOf(out.timings));
  if (ab.ok()) {
    out.alpha_beta = *ab;
  } else {
    out.alpha_beta_status = ab.status();
  }
  return out;
}

ProjectionSection AnalyzeProjection(const SweepData& sweep, const TargetSection& target,
                                    const ScalingSection& scaling, const StudyOptions& options) {
  ProjectionSection out;
  StatusOr<ClusterProfile> profile = FindClusterProfile(options.profile);
  if (!profile.ok()) {
    out.status = profile.status();
    return out;
  }
  out.profile = *profile;
  if (!(options.device_speedup > 0)) {
    out.status = InvalidArgumentError(fmt::format(
        "--device-speedup {} must be positive (1 = the measured machine)", options.device_speedup));
    return out;
  }
  if (options.max_world_size < 1) {
    out.status = InvalidArgumentError(
        fmt::format("--max-nodes {} must be at least 1", options.max_world_size));
    return out;
  }
  StatusOr<ComputeModel> compute = FitComputeModel(scaling.timings);
  if (!compute.ok()) {
    out.status = compute.status();
    return out;
  }
  out.compute = *compute;
  out.compute.speedup = options.device_speedup;
  out.parameters = options.parameters;
  for (const RunData& r : sweep.runs) {
    if (out.parameters == 0) out.parameters = r.parameters;
  }
  // The step-time model of this machine (per model, measured α–β) and its check against the
  // measured runs: what every projection is printed beside.
  out.check = CheckStepModel(scaling.timings);
  if (StatusOr<StepModel> m = FitStepModel(scaling.timings); m.ok()) out.model = *m;
  std::set<std::pair<int, int64_t>> measured;
  std::map<std::string, const RunTiming*> timing_of;  // run id -> its timing
  double smallest_local = 0;
  for (const RunTiming& t : scaling.timings) {
    measured.insert({t.world_size, t.batch_size});
    timing_of[t.run_id] = &t;
    const double b = static_cast<double>(t.local_batch_size);
    if (b > 0 && (smallest_local == 0 || b < smallest_local)) smallest_local = b;
  }
  out.min_local_batch =
      options.min_local_batch > 0 ? static_cast<double>(options.min_local_batch) : smallest_local;
  if (out.parameters <= 0) {
    out.status = FailedPreconditionError(
        "the model size is unknown for this sweep's model; pass --parameters N (the `parameters` "
        "field of the runner's start line)");
    return out;
  }
  std::vector<StepsAtBatch> steps;
  std::map<int64_t, ComputeModel> compute_at;
  for (const BatchBest& b : target.best) {
    if (!b.best) continue;
    steps.push_back({b.batch_size, b.best_steps});
    // The compute model of the best configuration's own model, when it was timed.
    auto t = timing_of.find(b.best->run_id);
    if (t != timing_of.end()) {
      if (const ComputeModel* c = out.model.ComputeForOneRankPerNode(t->second->strong_key)) {
        ComputeModel m = *c;
        m.speedup = options.device_speedup;
        compute_at[b.batch_size] = m;
      }
    }
  }
  if (steps.empty()) {
    out.status = FailedPreconditionError(
        fmt::format("no run reached the target {}, so there are no steps to target to project",
                    target.target.ToString()));
    return out;
  }
  out.points = Project(out.compute, out.profile, out.parameters, steps, options.max_world_size,
                       out.min_local_batch, measured, compute_at);
  return out;
}

}  // namespace batchlab::analysis
