// JSON form of the study sections (see study_json.h).
#include "analysis/study_json.h"

#include <cmath>
#include <limits>

namespace batchlab::analysis {

namespace {

using nlohmann::json;

json Num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

// Every estimate's interval with how it was computed; an unavailable one has null bounds and
// says why (never a zero-width interval).
json IntervalJson(const Interval& i) {
  json j = {{"value", Num(i.value)},
            {"low", i.available() ? Num(i.low) : json(nullptr)},
            {"high", i.available() ? Num(i.high) : json(nullptr)},
            {"confidence", i.confidence},
            {"available", i.available()},
            {"method", i.method}};
  if (!i.available()) j["unavailable"] = i.unavailable;
  return j;
}

// `compute` is in the section's unit (compute_unit); rank_seconds and flops are both kept.
json HitJson(const TargetHit& h, ComputeUnit unit) {
  json j = {{"run_id", h.run_id},
            {"label", h.label},
            {"batch_size", h.batch_size},
            {"world_size", h.world_size},
            {"nodes", h.nodes},
            {"seed", h.seed},
            {"lr_rule", h.lr_rule},
            {"optimizer", h.optimizer},
            {"status", HitStatusName(h.status)}};
  if (h.status == HitStatus::kReached) {
    j["step"] = h.step;
    j["samples"] = Num(h.samples);
    j["seconds"] = Num(h.seconds);
    j["compute"] = Num(ComputeIn(h, unit));
    j["rank_seconds"] = Num(h.compute);
    j["flops"] = h.flops > 0 ? json(h.flops) : json(nullptr);
  }
  return j;
}

json ScalingRowsJson(const std::vector<ScalingRow>& rows) {
  json a = json::array();
  for (const ScalingRow& r : rows) {
    json row = {{"group", r.group},
                {"config", r.config_key},
                {"world_size", r.world_size},
                {"nodes", r.nodes},
                {"runs", r.runs},
                {"samples_per_second", Num(r.throughput)},
                {"speedup", Num(r.speedup)},
                {"efficiency", Num(r.efficiency)},
                {"efficiency_interval", IntervalJson(r.efficiency_interval)},
                {"baseline_world_size", r.base_world_size},
                {"load", Num(r.load)},
                {"above_possible", r.above_possible},
                {"comm_fraction", Num(r.comm_fraction)}};
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

json ModelCheckJson(const ModelCheck& c) {
  json out = {{"sentence", c.Sentence()}};
  if (!c.status.ok()) {
    out["error"] = c.status.message();
    return out;
  }
  json rows = json::array();
  for (const ModelCheckRow& r : c.rows) {
    json j = {{"config", r.label},
              {"world_size", r.world_size},
              {"batch_size", r.batch_size},
              {"local_batch_size", r.local_batch_size},
              {"runs", r.runs},
              {"measured_step_seconds", Num(r.measured)},
              {"fitted_step_seconds", Num(r.fitted)},
              {"fitted_error", Num(r.fitted_error)},
              {"held_out_step_seconds", Num(r.held_out)},
              {"held_out_error", Num(r.held_out_error)},
              {"reproduced", r.reproduced}};
    if (!r.held_out_note.empty()) j["held_out_note"] = r.held_out_note;
    rows.push_back(j);
  }
  out["configurations"] = rows;
  out["fitted_rms_error"] = Num(c.fitted_rms);
  out["fitted_max_error"] = Num(c.fitted_max);
  out["tolerance"] = Num(c.tolerance);
  out["held_out"] = c.held_out;
  out["held_out_median_error"] = Num(c.held_out_median);
  out["held_out_max_error"] = Num(c.held_out_max);
  out["goal"] = c.goal;
  out["goal_met"] = c.goal_met;
  out["method"] =
      "leave-one-configuration-out: each measured (model, K, B) predicted by the model fitted on "
      "every other configuration; errors relative to the measured mean step time";
  return out;
}

json GnsJson(const GnsSection& gns, const StudyOptions& options, bool include_series) {
  json runs = json::array();
  for (const GnsRun& r : gns.runs) {
    json j = {{"run_id", r.run_id},
              {"label", r.label},
              {"batch_size", r.batch_size},
              {"world_size", r.world_size}};
    if (r.status.ok()) {
      j["b_simple"] = IntervalJson(r.estimate.b_simple);
      j["g2"] = Num(r.estimate.g2);
      j["trace"] = Num(r.estimate.trace);
      j["samples"] = r.estimate.samples;
      j["first_step"] = r.estimate.first_step;
      j["last_step"] = r.estimate.last_step;
    } else {
      j["error"] = r.status.message();
    }
    if (r.smoothed_end) {
      j["smoothed_end"] = {{"step", r.smoothed_end->step},
                           {"b_simple", Num(r.smoothed_end->b_simple)}};
    }
    if (include_series) {
      json s = json::array();
      for (const GnsPoint& p : r.series) {
        s.push_back({{"step", p.step},
                     {"g2", Num(p.g2)},
                     {"trace", Num(p.trace)},
                     {"b_simple", Num(p.b_simple)}});
      }
      j["series"] = s;
    }
    runs.push_back(j);
  }
  json seeds = json::array();
  for (const GnsConfigSpread& c : gns.seeds) {
    seeds.push_back({{"config", c.config_key},
                     {"label", c.label},
                     {"seeds", c.spread.n},
                     {"mean", Num(c.spread.mean)},
                     {"stddev", Num(c.spread.stddev)},
                     {"min", Num(c.spread.min)},
                     {"max", Num(c.spread.max)}});
  }
  const auto [from, to] = GnsWindow(options);
  json out = {{"beta", options.beta},
              {"from_step", from},
              {"to_step", to == std::numeric_limits<int64_t>::max() ? json(nullptr) : json(to)},
              {"resamples", options.resamples},
              {"runs", runs},
              {"seeds", seeds}};
  if (gns.median) {
    out["median"] = Num(*gns.median);
    out["min"] = Num(*gns.min);
    out["max"] = Num(*gns.max);
  }
  return out;
}

json TargetJson(const TargetSection& t) {
  json runs = json::array();
  for (const TargetHit& h : t.hits) runs.push_back(HitJson(h, t.compute.unit));
  json best = json::array();
  for (const BatchBest& b : t.best) {
    json j = {
        {"batch_size", b.batch_size},       {"runs", b.runs},           {"reached", b.reached},
        {"never_reached", b.never_reached}, {"diverged", b.diverged},   {"failed", b.failed},
        {"unfinished", b.unfinished},       {"no_metric", b.no_metric}, {"pruned", b.pruned},
        {"stalled", b.stalled}};
    if (b.best) {
      j["best_steps"] = Num(b.best_steps);
      j["best_samples"] = Num(b.best_samples);
      j["seed_steps"] = b.seed_steps;
      j["best_run"] = HitJson(*b.best, t.compute.unit);
    } else {
      j["best_steps"] = nullptr;
    }
    best.push_back(j);
  }
  json out = {{"target", t.target.ToString()},
              {"compute_unit", ComputeUnitName(t.compute.unit)},
              {"compute_note", t.compute.Note()},
              {"per_batch_size", best},
              {"runs", runs}};
  if (!t.lr_found.empty()) {
    json lr = json::array();
    for (const LrFound& f : t.lr_found) {
      lr.push_back({{"batch_size", f.batch_size},
                    {"others", f.others},
                    {"lr", f.lr ? json(*f.lr) : json(nullptr)},
                    {"best_steps", f.lr ? json(Num(f.best_steps)) : json(nullptr)},
                    {"runs", f.runs},
                    {"lrs_tried", f.lrs},
                    {"at_range_edge", f.at_edge}});
    }
    out["lr_search"] = {{"path", t.lr_search_path}, {"per_batch_size", lr}};
  }
  return out;
}

json CritJson(const CritSection& c) {
  json out;
  if (c.b_simple) out["b_simple"] = Num(*c.b_simple);
  const std::optional<double> tokens = c.tokens_per_sequence;  // a language model's sweep
  if (tokens) out["tokens_per_sequence"] = Num(*tokens);
  if (tokens && c.b_simple) out["b_simple_tokens"] = Num(*tokens * *c.b_simple);
  if (!c.status.ok()) {
    out["error"] = c.status.message();
    return out;
  }
  const CritFit& f = c.fit;
  out["s_min"] = IntervalJson(f.s_min);
  out["e_min"] = IntervalJson(f.e_min);
  out["b_crit"] = IntervalJson(f.b_crit);
  out["b_crit_outside_sweep"] = f.b_crit_outside_sweep;
  if (tokens) {  // batch sizes and samples in tokens: x tokens per sequence
    auto scaled = [&](Interval i) {
      i.value *= *tokens;
      i.low *= *tokens;
      i.high *= *tokens;
      return IntervalJson(i);
    };
    out["b_crit_tokens"] = scaled(f.b_crit);
    out["e_min_tokens"] = scaled(f.e_min);
  }
  out["bootstrap"] = f.bootstrap;
  out["resamples"] = f.resamples;
  out["seed_dof"] = f.seed_dof;
  out["seed_relative_sd"] = Num(f.seed_relative_sd);
  out["lack_of_fit_relative_sd"] = Num(f.lack_of_fit_relative_sd);
  out["max_eval_resolution"] = Num(f.max_resolution);
  out["points"] = f.points;
  out["batch_sizes"] = f.batch_sizes;
  out["rms_relative_residual"] = Num(f.rms_relative_residual);
  if (c.b_simple_ratio) out["b_simple_over_b_crit"] = Num(*c.b_simple_ratio);
  json res = json::array();
  for (const CritResidual& r : f.residuals) {
    res.push_back({{"batch_size", r.batch_size},
                   {"steps", r.steps},
                   {"fitted", Num(r.fitted)},
                   {"relative", Num(r.relative)},
                   {"resolution", Num(r.resolution)},
                   {"region", RegionName(RegionOf(r.batch_size, f.b_crit.value))}});
  }
  out["residuals"] = res;
  return out;
}

json ParetoJson(const ParetoSection& p) {
  json front = json::array();
  for (size_t i : p.frontier) front.push_back(HitJson(*p.hits[i], p.compute.unit));
  return {{"compute_unit", ComputeUnitName(p.compute.unit)},
          {"compute_note", p.compute.Note()},
          {"frontier", front},
          {"points", p.points.size()}};
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
                    {"step_seconds", Num(t.step_seconds)},
                    {"step_seconds_interval", IntervalJson(t.step_interval)},
                    {"host", t.host},
                    {"load", Num(t.load)},
                    {"cpus", t.cpus > 0 ? json(t.cpus) : json(nullptr)},
                    {"load_avg", t.cpus > 0 ? Num(t.load_avg) : json(nullptr)},
                    {"comm_seconds", Num(t.comm_seconds)},
                    {"samples_per_second", Num(t.throughput)},
                    {"comm_fraction", Num(t.comm_fraction)},
                    {"bus_bandwidth", Num(t.bus_bandwidth)}});
  }
  json out = {
      {"strong", ScalingRowsJson(s.strong)}, {"weak", ScalingRowsJson(s.weak)}, {"runs", runs}};
  if (s.alpha_beta_status.ok()) {
    out["alpha_beta"] = {{"alpha_seconds", Num(s.alpha_beta.alpha_seconds)},
                         {"beta_bytes_per_second", Num(s.alpha_beta.bandwidth_bytes_per_second)},
                         {"rms_residual_seconds", Num(s.alpha_beta.rms_residual_seconds)},
                         {"observations", s.alpha_beta.observations},
                         {"designs", s.alpha_beta.designs},
                         {"separated", s.alpha_beta.separated},
                         {"method", s.alpha_beta.separated
                                        ? "least squares of the ring model, alpha >= 0, 1/beta >= 0"
                                        : "one (K, bytes) design: bandwidth-only fit, alpha = 0"}};
  } else {
    out["alpha_beta"] = {{"error", s.alpha_beta_status.message()}};
  }
  return out;
}

json ProjectionJson(const ProjectionSection& p) {
  json out = {{"model", true}, {"profile", p.profile.name}};
  if (!p.status.ok()) {
    out["error"] = p.status.message();
    return out;
  }
  out["profile_detail"] = {{"description", p.profile.description},
                           {"source", p.profile.source},
                           {"alpha_seconds", p.profile.alpha_seconds},
                           {"beta_bytes_per_second", p.profile.bandwidth_bytes_per_second}};
  out["compute"] = {{"seconds_per_sample", Num(p.compute.seconds_per_sample)},
                    {"seconds_per_step", Num(p.compute.seconds_per_step)},
                    {"runs", p.compute.runs},
                    {"rms_relative_residual", Num(p.compute.rms_relative_residual)},
                    {"device_speedup", Num(p.compute.speedup)}};
  json models = json::array();
  for (const auto& [key, m] : p.model.compute) {
    models.push_back({{"model", key},
                      {"seconds_per_sample", Num(m.seconds_per_sample)},
                      {"seconds_per_step", Num(m.seconds_per_step)},
                      {"floor_local_batch", Num(m.min_local_batch)},
                      {"local_batches", m.local_batches},
                      {"runs", m.runs},
                      {"rms_relative_residual", Num(m.rms_relative_residual)}});
  }
  out["compute_models"] = models;
  out["min_local_batch"] = Num(p.min_local_batch);
  out["check"] = ModelCheckJson(p.check);
  out["parameters"] = p.parameters;
  out["compute_unit"] = "rank-seconds";
  json pts = json::array();
  for (const ProjectedPoint& x : p.points) {
    pts.push_back({{"world_size", x.world_size},
                   {"batch_size", x.batch_size},
                   {"compute_seconds", Num(x.compute_seconds)},
                   {"comm_seconds", Num(x.comm_seconds)},
                   {"step_seconds", Num(x.step_seconds)},
                   {"steps", Num(x.steps)},
                   {"time_to_target", Num(x.time_to_target)},
                   {"compute", Num(x.compute)},  // rank-seconds: the projection models time
                   {"on_frontier", x.on_frontier},
                   {"measured_here", x.measured}});
  }
  out["points"] = pts;
  return out;
}

}  // namespace batchlab::analysis
