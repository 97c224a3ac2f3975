// `batchlab analyze project` (see projection_section.h).
#include "analysis/sections/projection_section.h"

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include <fmt/core.h>

#include "analysis/sections/section_format.h"

namespace batchlab::analysis {

namespace {

using nlohmann::json;

// Per (K, B): the measured configuration with the fewest mean steps among those all of whose
// seeds reached the target (what the projection's steps at B stand for), with its mean time and
// allreduce seconds per step.
std::map<std::pair<int, int64_t>, MeasuredAtPoint> MeasuredAt(
    const TargetSection& target, const std::map<std::string, const RunTiming*>& timing_of) {
  struct Sum {
    std::string label;
    int runs = 0, reached = 0, timed = 0;
    double steps = 0, seconds = 0, comm = 0;
  };
  std::map<std::tuple<int, int64_t, std::string>, Sum> configs;
  for (const TargetHit& h : target.hits) {
    Sum& s = configs[{h.world_size, h.batch_size, h.config_key}];
    if (s.label.empty()) s.label = h.label;
    ++s.runs;
    if (h.status != HitStatus::kReached) continue;
    ++s.reached;
    s.steps += static_cast<double>(h.step);
    s.seconds += h.seconds;
    if (auto t = timing_of.find(h.run_id); t != timing_of.end()) {
      s.comm += t->second->comm_seconds;
      ++s.timed;
    }
  }
  std::map<std::pair<int, int64_t>, MeasuredAtPoint> out;
  for (const auto& [key, s] : configs) {
    if (s.reached == 0 || s.reached != s.runs) continue;
    MeasuredAtPoint m{s.label, s.steps / s.reached, s.seconds / s.reached,
                      s.timed ? s.comm / s.timed : 0};
    auto [it, added] = out.insert({{std::get<0>(key), std::get<1>(key)}, m});
    if (!added && m.steps < it->second.steps) it->second = m;
  }
  return out;
}

}  // namespace

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
  std::map<int64_t, std::string> steps_from;  // batch size -> the configuration its steps are of
  for (const BatchBest& b : target.best) {
    if (!b.best) continue;
    steps.push_back({b.batch_size, b.best_steps});
    steps_from[b.batch_size] = b.best->label;
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
  // Every measured configuration against what was measured at it, the difference with its reason.
  const std::map<std::pair<int, int64_t>, MeasuredAtPoint> here = MeasuredAt(target, timing_of);
  for (ProjectedPoint& p : out.points) {
    auto m = here.find({p.world_size, p.batch_size});
    if (!p.measured || m == here.end()) continue;
    p.here = m->second;
    auto own = compute_at.find(p.batch_size);
    p.difference = ProjectionDifference(p, m->second,
                                        own != compute_at.end() ? own->second : out.compute,
                                        steps_from[p.batch_size], out.profile.name);
  }
  return out;
}

std::vector<Table> ProjectionTables(const ProjectionSection& p) {
  Table t{"projection",
          "PROJECTION (a model, not a measurement): " + p.profile.name,
          {"world_size", "batch_size", "compute_s", "comm_s", "step_s", "steps", "time_to_target_s",
           "compute_rank_s", "frontier", "measured_here", "measured_time_s", "measured_steps"},
          {},
          {}};
  if (!p.status.ok()) {
    t.notes.push_back("Not projected: " + p.status.message());
    return {t};
  }
  for (const ProjectedPoint& x : p.points) {
    t.rows.push_back(
        {IntegerCell(x.world_size), IntegerCell(x.batch_size), ExactNumber(x.compute_seconds),
         ExactNumber(x.comm_seconds), ExactNumber(x.step_seconds), ExactNumber(x.steps),
         ExactNumber(x.time_to_target), ExactNumber(x.compute), x.on_frontier ? "yes" : "",
         x.measured ? "yes" : "", x.here ? ExactNumber(x.here->time_to_target) : "",
         x.here ? ExactNumber(x.here->steps) : ""});
  }
  int agree = 0, compared = 0;
  for (const ProjectedPoint& x : p.points) {
    if (!x.here) continue;
    ++compared;
    if (x.difference.empty()) {
      ++agree;
    } else {
      t.notes.push_back(x.difference);
    }
  }
  if (compared > 0) {
    t.notes.push_back(fmt::format(
        "At {} of the {} configurations measured here the projection gives the measured time and "
        "steps to target (within {}%); each other one is explained above.",
        agree, compared, ProseNumber(100 * kProjectionAgreement)));
  }
  t.notes.push_back(p.check.Sentence());
  if (p.min_local_batch > 0) {
    t.notes.push_back(fmt::format(
        "No projected configuration has fewer than {} samples per rank unless it was measured "
        "(--min-local-batch; default: the smallest local batch measured); per-rank compute below "
        "the smallest measured local batch is held at its measured cost (the model's floor).",
        ProseNumber(p.min_local_batch)));
  }
  t.notes.push_back(fmt::format(
      "t_step = c max(B/K, b_floor) + o + 2(K-1) alpha + 2(K-1)/K n/beta with c and o fitted per "
      "model (pooled over all: c = {} s/sample and o = {} s/step on {} measured runs; device "
      "speedup {}), n = {} bytes ({} fp32 parameters), and "
      "profile {}: alpha = {} s, beta = {} GB/s ({}). Source: {}. Time to target = best measured "
      "steps at B x t_step; compute = K x time. No overlap of communication with compute.",
      ProseNumber(p.compute.seconds_per_sample), ProseNumber(p.compute.seconds_per_step),
      p.compute.runs, ProseNumber(p.compute.speedup), ProseNumber(GradientBytes(p.parameters)),
      p.parameters, p.profile.name, ProseNumber(p.profile.alpha_seconds),
      ProseNumber(p.profile.bandwidth_bytes_per_second / 1e9), p.profile.description,
      p.profile.source));
  Table check{"projection_check",
              "Step-time model against the measured runs (fitted and held out)",
              {"config", "world_size", "batch_size", "local_batch", "runs", "measured_step_s",
               "fitted_step_s", "fitted_error", "held_out_step_s", "held_out_error", "reproduced"},
              {},
              {}};
  for (const ModelCheckRow& r : p.check.rows) {
    check.rows.push_back(
        {r.label, IntegerCell(r.world_size), IntegerCell(r.batch_size),
         IntegerCell(r.local_batch_size), IntegerCell(r.runs), ExactNumber(r.measured),
         ExactNumber(r.fitted), PercentCell(r.fitted_error),
         std::isfinite(r.held_out) ? ExactNumber(r.held_out) : "",
         std::isfinite(r.held_out_error) ? PercentCell(r.held_out_error) : r.held_out_note,
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
              {"measured_step_seconds", JsonNumber(r.measured)},
              {"fitted_step_seconds", JsonNumber(r.fitted)},
              {"fitted_error", JsonNumber(r.fitted_error)},
              {"held_out_step_seconds", JsonNumber(r.held_out)},
              {"held_out_error", JsonNumber(r.held_out_error)},
              {"reproduced", r.reproduced}};
    if (!r.held_out_note.empty()) j["held_out_note"] = r.held_out_note;
    rows.push_back(j);
  }
  out["configurations"] = rows;
  out["fitted_rms_error"] = JsonNumber(c.fitted_rms);
  out["fitted_max_error"] = JsonNumber(c.fitted_max);
  out["tolerance"] = JsonNumber(c.tolerance);
  out["held_out"] = c.held_out;
  out["held_out_median_error"] = JsonNumber(c.held_out_median);
  out["held_out_max_error"] = JsonNumber(c.held_out_max);
  out["goal"] = c.goal;
  out["goal_met"] = c.goal_met;
  out["method"] =
      "leave-one-configuration-out: each measured (model, K, B) predicted by the model fitted on "
      "every other configuration; errors relative to the measured mean step time";
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
  out["compute"] = {{"seconds_per_sample", JsonNumber(p.compute.seconds_per_sample)},
                    {"seconds_per_step", JsonNumber(p.compute.seconds_per_step)},
                    {"runs", p.compute.runs},
                    {"rms_relative_residual", JsonNumber(p.compute.rms_relative_residual)},
                    {"device_speedup", JsonNumber(p.compute.speedup)}};
  json models = json::array();
  for (const auto& [key, m] : p.model.compute) {
    models.push_back({{"model", key},
                      {"seconds_per_sample", JsonNumber(m.seconds_per_sample)},
                      {"seconds_per_step", JsonNumber(m.seconds_per_step)},
                      {"floor_local_batch", JsonNumber(m.min_local_batch)},
                      {"local_batches", m.local_batches},
                      {"runs", m.runs},
                      {"rms_relative_residual", JsonNumber(m.rms_relative_residual)}});
  }
  out["compute_models"] = models;
  out["min_local_batch"] = JsonNumber(p.min_local_batch);
  out["check"] = ModelCheckJson(p.check);
  out["parameters"] = p.parameters;
  out["compute_unit"] = "rank-seconds";
  json pts = json::array();
  for (const ProjectedPoint& x : p.points) {
    pts.push_back({{"world_size", x.world_size},
                   {"batch_size", x.batch_size},
                   {"compute_seconds", JsonNumber(x.compute_seconds)},
                   {"comm_seconds", JsonNumber(x.comm_seconds)},
                   {"step_seconds", JsonNumber(x.step_seconds)},
                   {"steps", JsonNumber(x.steps)},
                   {"time_to_target", JsonNumber(x.time_to_target)},
                   {"compute", JsonNumber(x.compute)},  // rank-seconds: the projection models time
                   {"on_frontier", x.on_frontier},
                   {"measured_here", x.measured}});
    if (x.here) {
      pts.back()["measured"] = {{"config", x.here->label},
                                {"steps", JsonNumber(x.here->steps)},
                                {"time_to_target", JsonNumber(x.here->time_to_target)},
                                {"comm_seconds", JsonNumber(x.here->comm_seconds)}};
      pts.back()["agrees_with_measured"] = x.difference.empty();
      if (!x.difference.empty()) pts.back()["difference"] = x.difference;
    }
  }
  out["points"] = pts;
  return out;
}

}  // namespace batchlab::analysis
