// Tables of the study sections (see study_tables.h).
#include "analysis/study_tables.h"

#include <cmath>

#include <fmt/core.h>

namespace batchlab::analysis {

namespace {

// Cells hold exact numbers: the text views round them (4 significant digits, percents 3), the
// CSV and JSON keep them (results/table_writer.h FormatRows).
std::string I(int64_t v) { return std::to_string(v); }
std::string Pct(double v) { return results::ExactNumber(100 * v) + "%"; }
// An interval's bound, or "unavailable" (its reason is in the table's notes).
std::string Low(const Interval& i) { return i.available() ? ExactNumber(i.low) : "unavailable"; }
std::string High(const Interval& i) { return i.available() ? ExactNumber(i.high) : "unavailable"; }

std::string Window(const StudyOptions& o) {
  const auto [from, to] = GnsWindow(o);
  const bool open_end = to == std::numeric_limits<int64_t>::max();
  return fmt::format("steps [{}, {}]", from, open_end ? "end" : std::to_string(to));
}

}  // namespace

std::vector<Table> GnsTables(const GnsSection& gns, const StudyOptions& options) {
  Table t{"gns",
          "Gradient noise scale B_simple per run",
          {"run_id", "run", "B_simple", "ci_low", "ci_high", "|G|^2", "tr(Sigma)", "samples",
           "smoothed_end", "status"},
          {},
          {}};
  for (const GnsRun& r : gns.runs) {
    const std::string last = r.smoothed_end ? ExactNumber(r.smoothed_end->b_simple) : "";
    if (r.status.ok()) {
      const GnsEstimate& e = r.estimate;
      t.rows.push_back({r.run_id, r.label, ExactNumber(e.b_simple.value),
                        ExactNumber(e.b_simple.low), ExactNumber(e.b_simple.high),
                        ExactNumber(e.g2), ExactNumber(e.trace), I(e.samples), last, "ok"});
    } else {
      t.rows.push_back({r.run_id, r.label, "", "", "", "", "", "", last, r.status.message()});
    }
  }
  t.notes.push_back(fmt::format(
      "B_simple = tr(Sigma)/|G|^2 from the unbiased two-batch estimates (McCandlish et al. 2018, "
      "App. A): ratio of their means over {}, {:.0f}% moving-block bootstrap interval over steps "
      "({} resamples); smoothed_end = ratio of the debiased EMAs (beta={}) at the window's last "
      "step.",
      Window(options), 100 * options.confidence, options.resamples, options.beta));
  if (gns.median) {
    t.notes.push_back(fmt::format("Sweep B_simple: median {} over the runs (range {} to {}).",
                                  ExactNumber(*gns.median), ExactNumber(*gns.min),
                                  ExactNumber(*gns.max)));
  } else if (gns.runs.empty()) {
    t.notes.push_back(
        "No run logged gns_* metrics: set gns.every_steps > 0 and use >1 rank or accumulation.");
  }
  std::vector<Table> out = {t};
  if (!gns.seeds.empty()) {
    Table s{"gns_seeds",
            "B_simple across seeds",
            {"config", "run", "seeds", "mean", "stddev", "min", "max"},
            {},
            {}};
    for (const GnsConfigSpread& c : gns.seeds) {
      s.rows.push_back({c.config_key, c.label, I(c.spread.n), ExactNumber(c.spread.mean),
                        ExactNumber(c.spread.stddev), ExactNumber(c.spread.min),
                        ExactNumber(c.spread.max)});
    }
    out.push_back(s);
  }
  return out;
}

std::vector<Table> TargetTables(const TargetSection& target) {
  const std::string tgt = target.target.ToString();
  Table runs{"target_runs",
             "Steps to target per run (" + tgt + ")",
             {"run_id", "run", "status", "step", "samples", "train_seconds", "compute", "flops"},
             {},
             {}};
  for (const TargetHit& h : target.hits) {
    const bool ok = h.status == HitStatus::kReached;
    runs.rows.push_back({h.run_id, h.label, HitStatusName(h.status), ok ? I(h.step) : "",
                         ok ? ExactNumber(h.samples) : "", ok ? ExactNumber(h.seconds) : "",
                         ok ? ExactNumber(h.compute) : "",
                         ok && h.flops > 0 ? ExactNumber(h.flops) : ""});
  }
  runs.notes.push_back(
      std::string(kTrainSecondsDefinition) +
      ". compute = world_size x train_seconds (rank-seconds); flops = step x the flops_per_step the "
      "program reported on its start line (empty: not reported).");
  runs.notes.push_back("The frontier and the recommendation use " + target.compute.Note());
  Table best{
      "steps_to_target",
      "Best steps to target per batch size (" + tgt + ")",
      {"batch_size", "runs", "reached", "never_reached", "diverged", "failed", "unfinished",
       "no_metric", "pruned", "stalled", "best_steps", "best_samples", "seeds", "best_run_id",
       "best_run"},
      {},
      {}};
  for (const BatchBest& b : target.best) {
    best.rows.push_back({I(b.batch_size), I(b.runs), I(b.reached), I(b.never_reached),
                         I(b.diverged), I(b.failed), I(b.unfinished), I(b.no_metric), I(b.pruned),
                         I(b.stalled), b.best ? ExactNumber(b.best_steps) : "",
                         b.best ? ExactNumber(b.best_samples) : "",
                         I(static_cast<int64_t>(b.seed_steps.size())), b.best ? b.best->run_id : "",
                         b.best ? b.best->label : ""});
  }
  best.notes.push_back(
      "Best over the other swept values (learning rate, rule, optimizer) as in Shallue et al. "
      "2018; a configuration counts only if all its seeds reached the target (steps: seed mean). "
      "runs = reached + never_reached + diverged + failed + unfinished + no_metric + pruned + "
      "stalled; "
      "best_steps is empty where no configuration reached the target.");
  for (const std::string& w : target.warnings) best.notes.push_back("Warning: " + w + ".");
  if (target.lr_found.empty()) return {best, runs};
  const std::string& path = target.lr_search_path;
  Table lr{"lr_search",
           "LR found by the search per batch size (" + path + ")",
           {"batch_size", "others", path, "best_steps", "runs", "lrs_tried", "at_range_edge"},
           {},
           {}};
  for (const LrFound& f : target.lr_found) {
    lr.rows.push_back({I(f.batch_size), f.others, f.lr ? ExactNumber(*f.lr) : "",
                       f.lr ? ExactNumber(f.best_steps) : "", I(f.runs), I(f.lrs),
                       f.at_edge ? "yes" : "no"});
  }
  lr.notes.push_back(
      "Adaptive search (docs/spec.md \"LR search\"): a coarse log grid over the range, then "
      "bracketing refinement around the best; best = fewest mean steps with every seed reaching "
      "the target (empty: no LR reached it). runs: every run the search used at that batch size "
      "(pruned ones included).");
  return {best, lr, runs};
}

std::vector<Table> CritTables(const CritSection& crit) {
  Table fit{"critical_batch",
            "Critical batch size fit",
            {"quantity", "value", "ci_low", "ci_high"},
            {},
            {}};
  if (!crit.status.ok()) {
    fit.notes.push_back("Not fitted: " + crit.status.message());
    if (crit.b_simple)
      fit.notes.push_back("B_simple (median over runs) = " + ExactNumber(*crit.b_simple));
    return {fit};
  }
  const CritFit& f = crit.fit;
  fit.rows.push_back({"S_min (steps)", ExactNumber(f.s_min.value), Low(f.s_min), High(f.s_min)});
  fit.rows.push_back({"E_min (samples)", ExactNumber(f.e_min.value), Low(f.e_min), High(f.e_min)});
  fit.rows.push_back(
      {"B_crit = E_min/S_min", ExactNumber(f.b_crit.value), Low(f.b_crit), High(f.b_crit)});
  if (crit.b_simple) {
    fit.rows.push_back({"B_simple (median over runs)", ExactNumber(*crit.b_simple), "", ""});
    fit.rows.push_back({"B_simple / B_crit", ExactNumber(*crit.b_simple_ratio), "", ""});
  }
  if (const std::optional<double> t = crit.tokens_per_sequence) {  // a language model's sweep
    const auto tokens = [&](double v) { return ExactNumber(*t * v); };
    const auto lo = [&](const Interval& i) { return i.available() ? tokens(i.low) : Low(i); };
    const auto hi = [&](const Interval& i) { return i.available() ? tokens(i.high) : High(i); };
    fit.rows.push_back({"E_min (tokens)", tokens(f.e_min.value), lo(f.e_min), hi(f.e_min)});
    fit.rows.push_back(
        {"B_crit (tokens per step)", tokens(f.b_crit.value), lo(f.b_crit), hi(f.b_crit)});
    if (crit.b_simple) fit.rows.push_back({"B_simple (tokens)", tokens(*crit.b_simple), "", ""});
    fit.notes.push_back(fmt::format(
        "Every run stored tokens_per_step on its start line: {} tokens per sequence (sample), so "
        "the rows in tokens are the rows in samples times {}.",
        ExactNumber(*t), ExactNumber(*t)));
  }
  fit.notes.push_back(fmt::format(
      "Fit of S = S_min (1 + B_crit/B), linear in 1/B with weights 1/S^2 (McCandlish et al. 2018 "
      "section 2.3), over {} points at {} batch sizes (each at the middle of its evaluation "
      "interval); RMS relative residual {}.",
      f.points, f.batch_sizes, Pct(f.rms_relative_residual)));
  if (f.b_crit.available()) {
    fit.notes.push_back(fmt::format("{:.0f}% interval: {} ({} resamples).",
                                    100 * f.b_crit.confidence, f.b_crit.method, f.resamples));
  } else {
    fit.notes.push_back("Interval unavailable: " + f.b_crit.unavailable + ".");
  }
  if (f.b_crit_outside_sweep) {
    fit.notes.push_back("B_crit lies outside the swept batch sizes: it is an extrapolation.");
  }
  if (crit.b_simple) {
    fit.notes.push_back(
        "McCandlish et al. report that B_simple predicts B_crit within about an order of "
        "magnitude (ratio between 0.1 and 10).");
  }
  Table res{"critical_batch_residuals",
            "Fit residuals and regions",
            {"batch_size", "steps", "fitted", "relative_residual", "region"},
            {},
            {}};
  for (const CritResidual& r : f.residuals) {
    res.rows.push_back({ExactNumber(r.batch_size), ExactNumber(r.steps), ExactNumber(r.fitted),
                        Pct(r.relative), RegionName(RegionOf(r.batch_size, f.b_crit.value))});
  }
  res.notes.push_back(
      "Regions: near-perfect scaling for B <= B_crit/10 (<= 10% more samples than E_min), maximal "
      "data parallelism for B >= 10 B_crit (<= 10% more steps than S_min), diminishing returns "
      "between.");
  return {fit, res};
}

std::vector<Table> ParetoTables(const ParetoSection& p) {
  const char* unit = ComputeUnitName(p.compute.unit);
  Table t{"pareto",
          fmt::format("Pareto frontier: time vs compute ({}) to target", unit),
          {"rank", "run_id", "run", "train_seconds", "compute", "batch_size", "world_size", "nodes",
           "lr_rule", "optimizer"},
          {},
          {}};
  int rank = 1;
  for (size_t i : p.frontier) {
    const TargetHit& h = *p.hits[i];
    t.rows.push_back({I(rank++), h.run_id, h.label, ExactNumber(h.seconds),
                      ExactNumber(p.points[i].compute), I(h.batch_size), I(h.world_size),
                      I(h.nodes), h.lr_rule, h.optimizer});
  }
  t.notes.push_back(fmt::format(
      "{} of {} runs that reached the target are on the frontier (no other run is both faster "
      "and cheaper); frontier order: fastest first; {}. {}.",
      p.frontier.size(), p.points.size(), p.compute.Note(), kTrainSecondsDefinition));
  return {t};
}

std::vector<Table> ScalingTables(const ScalingSection& s) {
  int flagged = 0, incomparable = 0;
  auto rows_of = [&](const std::vector<ScalingRow>& rows, Table& t) {
    for (const ScalingRow& r : rows) {
      const Interval& iv = r.efficiency_interval;
      const bool own = r.base_world_size == r.world_size;  // the baseline's own row
      std::string eff = Pct(r.efficiency), low, high, flag;
      if (!own && iv.available()) {
        low = Pct(iv.low);
        high = Pct(iv.high);
      }
      if (!r.incomparable.empty()) {
        eff = low = high = "";  // not a result
        flag = "not comparable: " + r.incomparable;
        ++incomparable;
      } else if (r.above_possible) {
        eff = low = high = "";  // above what is possible beyond its interval: not a result
        flag = fmt::format("noise: {} is above 100% beyond its interval", Pct(r.efficiency));
        ++flagged;
      } else if (!own && !iv.available()) {
        flag = "interval unavailable: " + iv.unavailable;
      }
      t.rows.push_back({r.group, r.config_key, I(r.world_size), I(r.nodes), I(r.runs),
                        ExactNumber(r.throughput), ExactNumber(r.speedup), eff, low, high,
                        r.base_world_size > 0 ? I(r.base_world_size) : "",
                        r.load > 0 ? ExactNumber(r.load) : "", Pct(r.comm_fraction), flag});
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
    runs.rows.push_back({t.run_id, t.label, I(t.world_size), I(t.batch_size), I(t.local_batch_size),
                         I(t.steps), ExactNumber(t.step_seconds),
                         si.available() ? ExactNumber(si.low) : "",
                         si.available() ? ExactNumber(si.high) : "", ExactNumber(t.comm_seconds),
                         ExactNumber(t.throughput), Pct(t.comm_fraction),
                         t.bus_bandwidth > 0 ? ExactNumber(t.bus_bandwidth / 1e9) : "",
                         t.load > 0 ? ExactNumber(t.load) : "", t.cpus > 0 ? I(t.cpus) : ""});
  }
  bool comm_logged = false;
  for (const RunTiming& t : s.timings) comm_logged = comm_logged || t.comm_seconds > 0;
  if (!s.timings.empty() && !comm_logged) {
    runs.notes.push_back(
        "No run logged comm_seconds: communication was not measured (not measured as 0). The "
        "runner and the Python client's DDP hook log it; a program of its own should too.");
  }
  if (s.alpha_beta_status.ok()) {
    runs.notes.push_back(fmt::format(
        "Ring-allreduce fit t = 2(K-1) alpha + 2(K-1)/K n/beta over {} runs: alpha = {} s, beta = "
        "{} GB/s, RMS residual {} s{}.",
        s.alpha_beta.observations, ExactNumber(s.alpha_beta.alpha_seconds),
        ExactNumber(s.alpha_beta.bandwidth_bytes_per_second / 1e9),
        ExactNumber(s.alpha_beta.rms_residual_seconds),
        s.alpha_beta.separated
            ? ""
            : " (one (K, model size) design: a bandwidth-only fit with alpha = 0; sweep more node "
              "counts to separate latency from bandwidth)"));
  } else {
    runs.notes.push_back("Ring-allreduce alpha-beta fit: " + s.alpha_beta_status.message());
  }
  return {strong, weak, runs};
}

std::vector<Table> ProjectionTables(const ProjectionSection& p) {
  Table t{"projection",
          "PROJECTION (a model, not a measurement): " + p.profile.name,
          {"world_size", "batch_size", "compute_s", "comm_s", "step_s", "steps", "time_to_target_s",
           "compute_rank_s", "frontier", "measured_here"},
          {},
          {}};
  if (!p.status.ok()) {
    t.notes.push_back("Not projected: " + p.status.message());
    return {t};
  }
  for (const ProjectedPoint& x : p.points) {
    t.rows.push_back({I(x.world_size), I(x.batch_size), ExactNumber(x.compute_seconds),
                      ExactNumber(x.comm_seconds), ExactNumber(x.step_seconds),
                      ExactNumber(x.steps), ExactNumber(x.time_to_target), ExactNumber(x.compute),
                      x.on_frontier ? "yes" : "", x.measured ? "yes" : ""});
  }
  t.notes.push_back(p.check.Sentence());
  if (p.min_local_batch > 0) {
    t.notes.push_back(fmt::format(
        "No projected configuration has fewer than {} samples per rank unless it was measured "
        "(--min-local-batch; default: the smallest local batch measured); per-rank compute below "
        "the smallest measured local batch is held at its measured cost (the model's floor).",
        ExactNumber(p.min_local_batch)));
  }
  t.notes.push_back(fmt::format(
      "t_step = c max(B/K, b_floor) + o + 2(K-1) alpha + 2(K-1)/K n/beta with c and o fitted per "
      "model (pooled over all: c = {} s/sample and o = {} s/step on {} measured runs; device "
      "speedup {}), n = {} bytes ({} fp32 parameters), and "
      "profile {}: alpha = {} s, beta = {} GB/s ({}). Source: {}. Time to target = best measured "
      "steps at B x t_step; compute = K x time. No overlap of communication with compute.",
      ExactNumber(p.compute.seconds_per_sample), ExactNumber(p.compute.seconds_per_step),
      p.compute.runs, ExactNumber(p.compute.speedup), ExactNumber(GradientBytes(p.parameters)),
      p.parameters, p.profile.name, ExactNumber(p.profile.alpha_seconds),
      ExactNumber(p.profile.bandwidth_bytes_per_second / 1e9), p.profile.description,
      p.profile.source));
  Table check{"projection_check",
              "Step-time model against the measured runs (fitted and held out)",
              {"config", "world_size", "batch_size", "local_batch", "runs", "measured_step_s",
               "fitted_step_s", "fitted_error", "held_out_step_s", "held_out_error", "reproduced"},
              {},
              {}};
  for (const ModelCheckRow& r : p.check.rows) {
    check.rows.push_back({r.label, I(r.world_size), I(r.batch_size), I(r.local_batch_size),
                          I(r.runs), ExactNumber(r.measured), ExactNumber(r.fitted),
                          Pct(r.fitted_error),
                          std::isfinite(r.held_out) ? ExactNumber(r.held_out) : "",
                          std::isfinite(r.held_out_error) ? Pct(r.held_out_error) : r.held_out_note,
                          r.reproduced ? "yes" : "no"});
  }
  check.notes.push_back(p.check.Sentence());
  check.notes.push_back(
      "fitted = the model fitted on every measured configuration (compute per model + this "
      "machine's alpha-beta fit); held_out = the model fitted without this configuration "
      "(leave-one-configuration-out cross-validation). reproduced: |fitted_error| within the "
      "tolerance max(2 x RMS, 5%).");
  return {t, check};
}

}  // namespace batchlab::analysis
