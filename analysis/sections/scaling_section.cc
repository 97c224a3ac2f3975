// `batchlab analyze scaling` (see scaling_section.h).
#include "analysis/sections/scaling_section.h"

#include <string>

#include <fmt/core.h>

#include "analysis/sections/section_format.h"

namespace batchlab::analysis {

namespace {

using nlohmann::json;

json ScalingRowsJson(const std::vector<ScalingRow>& rows) {
  json a = json::array();
  for (const ScalingRow& r : rows) {
    json row = {{"group", r.group},
                {"config", r.config_key},
                {"world_size", r.world_size},
                {"nodes", r.nodes},
                {"runs", r.runs},
                {"samples_per_second", JsonNumber(r.throughput)},
                {"speedup", JsonNumber(r.speedup)},
                {"efficiency", JsonNumber(r.efficiency)},
                {"efficiency_interval", IntervalJson(r.efficiency_interval)},
                {"baseline_world_size", r.base_world_size},
                {"load", JsonNumber(r.load)},
                {"above_possible", r.above_possible},
                {"comm_fraction", JsonNumber(r.comm_fraction)}};
    // Not a result: no baseline under the same conditions, or above 100% beyond its interval.
    row["result"] = r.incomparable.empty() && !r.above_possible;
    if (!r.incomparable.empty()) row["incomparable"] = r.incomparable;
    if (r.above_possible) {
      row["flag"] = "above 100% beyond its interval: timing noise or unequal conditions, not a "
                    "result";
    }
    a.push_back(row);
  }
  return a;
}

}  // namespace

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

std::vector<Table> ScalingTables(const ScalingSection& s) {
  int flagged = 0, incomparable = 0;
  auto rows_of = [&](const std::vector<ScalingRow>& rows, Table& t) {
    for (const ScalingRow& r : rows) {
      const Interval& iv = r.efficiency_interval;
      const bool own = r.base_world_size == r.world_size;  // the baseline's own row
      std::string eff = PercentCell(r.efficiency), low, high, flag;
      if (!own && iv.available()) {
        low = PercentCell(iv.low);
        high = PercentCell(iv.high);
      }
      if (!r.incomparable.empty()) {
        eff = low = high = "";  // not a result
        flag = "not comparable: " + r.incomparable;
        ++incomparable;
      } else if (r.above_possible) {
        eff = low = high = "";  // above what is possible beyond its interval: not a result
        flag =
            fmt::format("noise: {} is above 100% beyond its interval", ProsePercent(r.efficiency));
        ++flagged;
      } else if (!own && !iv.available()) {
        flag = "interval unavailable: " + iv.unavailable;
      }
      t.rows.push_back({r.group, r.config_key, IntegerCell(r.world_size), IntegerCell(r.nodes),
                        IntegerCell(r.runs), ExactNumber(r.throughput), ExactNumber(r.speedup), eff,
                        low, high, r.base_world_size > 0 ? IntegerCell(r.base_world_size) : "",
                        r.load > 0 ? ExactNumber(r.load) : "", PercentCell(r.comm_fraction), flag});
    }
  };
  const std::vector<std::string> cols = {
      "group",      "config",          "world_size", "nodes",      "runs",
      "samples_per_s", "speedup",      "efficiency", "efficiency_low", "efficiency_high",
      "baseline_K", "load",            "comm_fraction", "flag"};
  Table strong{"scaling_strong", "Strong scaling (fixed global batch)", cols, {}, {}};
  rows_of(s.strong, strong);
  Table weak{"scaling_weak", "Weak scaling (fixed local batch)", cols, {}, {}};
  rows_of(s.weak, weak);
  for (Table* t : {&strong, &weak}) {
    t->notes.push_back(
        "speedup = X(K)/X(K0), efficiency = speedup/(K/K0), X = samples/s, K0 (baseline_K) = the "
        "smallest world size of the group that ran under the same conditions (same host; both "
        "or neither oversubscribed, i.e. more ranks running than cores; oversubscribed runs "
        "with loads within 25%); load = mean ranks running on the host "
        "while the runs ran. The interval: percentile bootstrap of the step-time distributions "
        "(moving blocks over each run's steps, and over the runs when several): efficiency_low to "
        "efficiency_high. A row with a flag is not a result: its efficiency is left empty.");
  }
  if (flagged > 0) {
    strong.notes.push_back(fmt::format(
        "{} efficiency estimate(s) lie above 100% beyond their interval: more than K/K0 times the "
        "baseline's throughput is not possible from adding ranks, so they are shown as noise "
        "(timing noise, or conditions the load does not capture), not as results.",
        flagged));
  }
  if (incomparable > 0) {
    strong.notes.push_back(fmt::format(
        "{} row(s) have no baseline that ran under the same conditions: no efficiency is given "
        "(see `batchlab analyze scaling --format json`, field incomparable, for why); run the "
        "sweep with --slots so that runs do not share cores unevenly.",
        incomparable));
  }
  Table runs{"scaling_runs",
             "Measured step timings per run",
             {"run_id", "run", "world_size", "batch_size", "local_batch", "steps", "step_s",
              "step_s_low", "step_s_high", "comm_s", "samples_per_s", "comm_fraction",
              "bus_bw_GB_s", "load", "cpus"},
             {},
             {}};
  for (const RunTiming& t : s.timings) {
    const Interval& si = t.step_interval;
    runs.rows.push_back(
        {t.run_id, t.label, IntegerCell(t.world_size), IntegerCell(t.batch_size),
         IntegerCell(t.local_batch_size), IntegerCell(t.steps), ExactNumber(t.step_seconds),
         si.available() ? ExactNumber(si.low) : "", si.available() ? ExactNumber(si.high) : "",
         ExactNumber(t.comm_seconds), ExactNumber(t.throughput), PercentCell(t.comm_fraction),
         t.bus_bandwidth > 0 ? ExactNumber(t.bus_bandwidth / 1e9) : "",
         t.load > 0 ? ExactNumber(t.load) : "", t.cpus > 0 ? IntegerCell(t.cpus) : ""});
  }
  bool comm_logged = false;
  for (const RunTiming& t : s.timings) comm_logged = comm_logged || t.comm_seconds > 0;
  if (!s.timings.empty() && !comm_logged) {
    runs.notes.push_back(
        "No run logged comm_seconds: communication was not measured (not measured as 0). The "
        "runner and the Python client's DDP hook log it; a program of its own should too.");
  }
  if (s.alpha_beta_status.ok() && !s.alpha_beta.undetermined.empty()) {
    runs.notes.push_back(fmt::format(
        "Ring-allreduce alpha-beta fit over {} runs: not determined: {}. Its figures (alpha = {} "
        "s, beta = {} GB/s) reproduce the measured comm times at the measured designs only and "
        "are not the link's latency and bandwidth; the projection uses the cluster profile's.",
        s.alpha_beta.observations, s.alpha_beta.undetermined,
        ProseNumber(s.alpha_beta.alpha_seconds),
        ProseNumber(s.alpha_beta.bandwidth_bytes_per_second / 1e9)));
  } else if (s.alpha_beta_status.ok()) {
    runs.notes.push_back(fmt::format(
        "Ring-allreduce fit t = 2(K-1) alpha + 2(K-1)/K n/beta over {} runs: alpha = {} s, beta = "
        "{} GB/s, RMS residual {} s{}.",
        s.alpha_beta.observations, ProseNumber(s.alpha_beta.alpha_seconds),
        ProseNumber(s.alpha_beta.bandwidth_bytes_per_second / 1e9),
        ProseNumber(s.alpha_beta.rms_residual_seconds),
        s.alpha_beta.separated
            ? ""
            : " (one (K, model size) design: a bandwidth-only fit with alpha = 0; sweep more node "
              "counts to separate latency from bandwidth)"));
  } else {
    runs.notes.push_back("Ring-allreduce alpha-beta fit: " + s.alpha_beta_status.message());
  }
  return {strong, weak, runs};
}

json ScalingJson(const ScalingSection& s) {
  json runs = json::array();
  for (const RunTiming& t : s.timings) {
    runs.push_back({{"run_id", t.run_id},
                    {"label", t.label},
                    {"world_size", t.world_size},
                    {"batch_size", t.batch_size},
                    {"local_batch_size", t.local_batch_size},
                    {"steps", t.steps},
                    {"step_seconds", JsonNumber(t.step_seconds)},
                    {"step_seconds_interval", IntervalJson(t.step_interval)},
                    {"host", t.host},
                    {"load", JsonNumber(t.load)},
                    {"cpus", t.cpus > 0 ? json(t.cpus) : json(nullptr)},
                    {"load_avg", t.cpus > 0 ? JsonNumber(t.load_avg) : json(nullptr)},
                    {"comm_seconds", JsonNumber(t.comm_seconds)},
                    {"samples_per_second", JsonNumber(t.throughput)},
                    {"comm_fraction", JsonNumber(t.comm_fraction)},
                    {"bus_bandwidth", JsonNumber(t.bus_bandwidth)}});
  }
  json out = {
      {"strong", ScalingRowsJson(s.strong)}, {"weak", ScalingRowsJson(s.weak)}, {"runs", runs}};
  if (s.alpha_beta_status.ok()) {
    out["alpha_beta"] = {
        {"alpha_seconds", JsonNumber(s.alpha_beta.alpha_seconds)},
        {"beta_bytes_per_second", JsonNumber(s.alpha_beta.bandwidth_bytes_per_second)},
        {"rms_residual_seconds", JsonNumber(s.alpha_beta.rms_residual_seconds)},
        {"observations", s.alpha_beta.observations},
        {"designs", s.alpha_beta.designs},
        {"separated", s.alpha_beta.separated},
        {"determined", s.alpha_beta.undetermined.empty()},
        {"method", s.alpha_beta.separated
                       ? "least squares of the ring model, alpha >= 0, 1/beta >= 0"
                       : "one (K, bytes) design: bandwidth-only fit, alpha = 0"}};
    if (!s.alpha_beta.undetermined.empty()) {
      out["alpha_beta"]["not_determined"] = s.alpha_beta.undetermined;
    }
  } else {
    out["alpha_beta"] = {{"error", s.alpha_beta_status.message()}};
  }
  return out;
}

}  // namespace batchlab::analysis
