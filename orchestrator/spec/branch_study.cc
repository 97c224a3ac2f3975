// The branch study's spec section and its expansion (see branch_study.h).
#include "orchestrator/spec/branch_study.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "base/closest_name.h"
#include "base/run_values.h"
#include "base/spec_bounds.h"
#include "base/sync_mode.h"
#include "orchestrator/spec/expansion.h"
#include "orchestrator/spec/run_identity.h"
#include "orchestrator/spec/run_length.h"

namespace batchlab::orchestrator {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

constexpr long long kEvalsPerBranch = 4;

Status Bad(const std::string& field, const std::string& what) {
  return InvalidArgumentError(fmt::format("branch.{}: {}", field, what));
}

StatusOr<std::vector<double>> PositiveNumbers(const ordered_json& v, const std::string& field) {
  if (!v.is_array() || v.empty()) {
    return Bad(field, fmt::format("{} is not a non-empty array of positive numbers", v.dump()));
  }
  std::vector<double> out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_number() || !(v[i].get<double>() > 0) ||
        !(v[i].get<double>() <= static_cast<double>(kMaxSpecInteger))) {
      return Bad(fmt::format("{}[{}]", field, i),
                 fmt::format("{} is not a positive number", v[i].dump()));
    }
    out.push_back(v[i].get<double>());
  }
  return out;
}

StatusOr<long long> PositiveInteger(const ordered_json& v, const std::string& field,
                                    const std::string& fix) {
  if (!v.is_number_integer() || v.get<long long>() < 1 ||
      v.get<long long>() > kMaxSpecInteger) {
    return Bad(field, fmt::format("{} is not a positive integer; {}", v.dump(), fix));
  }
  return v.get<long long>();
}

}  // namespace

Status ParseBranchStudy(const ordered_json& o, BranchStudy* out) {
  if (!o.is_object()) {
    return InvalidArgumentError(
        "branch: is not an object such as {\"at_samples\": [2048], \"multipliers\": [1, 2, 4], "
        "\"delta_samples\": 4096}");
  }
  static const std::vector<std::string> kKeys = {
      "at_steps",      "at_samples", "every_samples", "at_fractions", "multipliers", "lr_rule",
      "lr_factors",    "delta_samples", "seeds",      "nodes",        "smooth_evals",
      "tolerance"};
  for (auto it = o.begin(); it != o.end(); ++it) {
    if (std::find(kKeys.begin(), kKeys.end(), it.key()) == kKeys.end()) {
      return Bad(it.key(), "unknown field; allowed here: at_steps, at_samples, every_samples, "
                           "at_fractions, multipliers, lr_rule, lr_factors, delta_samples, "
                           "seeds, nodes, smooth_evals, tolerance" +
                               DidYouMean(it.key(), kKeys));
    }
  }
  BranchStudy b;
  b.enabled = true;
  int kinds = 0;
  for (const char* k : {"at_steps", "at_samples", "every_samples", "at_fractions"}) {
    kinds += o.contains(k) ? 1 : 0;
  }
  if (kinds != 1) {
    return InvalidArgumentError(
        "branch: give exactly one of at_steps, at_samples, every_samples, at_fractions (the "
        "trunk's checkpoints the branches start from)");
  }
  if (o.contains("at_steps") || o.contains("at_samples")) {
    b.points_field = o.contains("at_steps") ? "at_steps" : "at_samples";
    b.points_kind = o.contains("at_steps") ? BranchStudy::Points::kAtSteps
                                           : BranchStudy::Points::kAtSamples;
    const ordered_json& v = o[b.points_field];
    if (!v.is_array() || v.empty()) {
      return Bad(b.points_field, fmt::format("{} is not a non-empty array of positive integers",
                                             v.dump()));
    }
    for (size_t i = 0; i < v.size(); ++i) {
      BATCHLAB_ASSIGN_OR_RETURN(
          long long n, PositiveInteger(v[i], fmt::format("{}[{}]", b.points_field, i),
                                       "branch points are counted from 1"));
      b.points.push_back(static_cast<double>(n));
    }
  } else if (o.contains("every_samples")) {
    b.points_field = "every_samples";
    b.points_kind = BranchStudy::Points::kEverySamples;
    BATCHLAB_ASSIGN_OR_RETURN(long long n, PositiveInteger(o["every_samples"], "every_samples",
                                                           "e.g. 4096"));
    b.points.push_back(static_cast<double>(n));
  } else {
    b.points_field = "at_fractions";
    b.points_kind = BranchStudy::Points::kAtFractions;
    BATCHLAB_ASSIGN_OR_RETURN(b.points, PositiveNumbers(o["at_fractions"], "at_fractions"));
    for (size_t i = 0; i < b.points.size(); ++i) {
      if (b.points[i] >= 1) {
        return Bad(fmt::format("at_fractions[{}]", i),
                   fmt::format("{} is not below 1 (a fraction of the trunk's steps; the trunk "
                               "writes no checkpoint at its very end)",
                               b.points[i]));
      }
    }
  }
  if (!o.contains("multipliers")) {
    return Bad("multipliers", "is missing: the branch batch sizes as multiples k of the trunk's "
                              "batch, e.g. [0.5, 1, 2, 4, 8]");
  }
  BATCHLAB_ASSIGN_OR_RETURN(b.multipliers, PositiveNumbers(o["multipliers"], "multipliers"));
  if (std::set<double>(b.multipliers.begin(), b.multipliers.end()).size() !=
      b.multipliers.size()) {
    return Bad("multipliers", "has a value twice; list each k once");
  }
  if (o.contains("lr_rule")) {
    const ordered_json& r = o["lr_rule"];
    if (!r.is_string() || (r != "sqrt" && r != "linear" && r != "none")) {
      return Bad("lr_rule", fmt::format("{} is not one of \"sqrt\" (Adam), \"linear\" (SGD), "
                                        "\"none\"",
                                        r.dump()));
    }
    b.lr_rule = r.get<std::string>();
  }
  if (o.contains("lr_factors")) {
    BATCHLAB_ASSIGN_OR_RETURN(b.lr_factors, PositiveNumbers(o["lr_factors"], "lr_factors"));
    if (std::set<double>(b.lr_factors.begin(), b.lr_factors.end()).size() !=
        b.lr_factors.size()) {
      return Bad("lr_factors", "has a value twice; list each factor once, e.g. [0.5, 1, 2]");
    }
  }
  if (!o.contains("delta_samples")) {
    return Bad("delta_samples", "is missing: the samples every branch trains (the same for every "
                                "k), e.g. 4096");
  }
  if (o["delta_samples"].is_number_integer() && o["delta_samples"].get<long long>() == 0) {
    return Bad("delta_samples", "0 trains nothing; give the samples every branch trains (the same "
                                "for every k), e.g. 4096");
  }
  BATCHLAB_ASSIGN_OR_RETURN(b.delta_samples,
                            PositiveInteger(o["delta_samples"], "delta_samples", "e.g. 4096"));
  if (o.contains("seeds")) {
    const ordered_json& s = o["seeds"];
    if (!s.is_array() || s.empty()) {
      return Bad("seeds", fmt::format("{} is not a non-empty array of seeds", s.dump()));
    }
    for (size_t i = 0; i < s.size(); ++i) {
      if (!s[i].is_number_integer() || s[i].get<long long>() < 0) {
        return Bad(fmt::format("seeds[{}]", i),
                   fmt::format("{} is not a non-negative integer", s[i].dump()));
      }
      b.seeds.push_back(s[i].get<long long>());
    }
    if (std::set<long long>(b.seeds.begin(), b.seeds.end()).size() != b.seeds.size()) {
      return Bad("seeds", "has a seed twice; list each once");
    }
  }
  if (o.contains("nodes")) {
    const ordered_json& n = o["nodes"];
    if (!n.is_array() || n.empty()) {
      return Bad("nodes", fmt::format("{} is not a non-empty array of node counts, e.g. [1, 2, 4] "
                                      "(every branch runs at each)",
                                      n.dump()));
    }
    for (size_t i = 0; i < n.size(); ++i) {
      BATCHLAB_ASSIGN_OR_RETURN(
          long long v, PositiveInteger(n[i], fmt::format("nodes[{}]", i), "e.g. 2"));
      if (v > kMaxNodes) {
        return Bad(fmt::format("nodes[{}]", i),
                   fmt::format("{} is more than {} nodes", v, kMaxNodes));
      }
      b.nodes.push_back(v);
    }
    if (std::set<long long>(b.nodes.begin(), b.nodes.end()).size() != b.nodes.size()) {
      return Bad("nodes", "has a node count twice; list each once");
    }
  }
  if (o.contains("smooth_evals")) {
    BATCHLAB_ASSIGN_OR_RETURN(long long n,
                              PositiveInteger(o["smooth_evals"], "smooth_evals", "e.g. 3"));
    b.smooth_evals = static_cast<int>(std::min<long long>(n, 1000));
  }
  if (o.contains("tolerance")) {
    if (!o["tolerance"].is_number() || !(o["tolerance"].get<double>() >= 0) ||
        !(o["tolerance"].get<double>() < 10)) {
      return Bad("tolerance", fmt::format("{} is not a loss gap in [0, 10), e.g. 0.01 (Merrill "
                                          "et al.'s epsilon)",
                                          o["tolerance"].dump()));
    }
    b.tolerance = o["tolerance"].get<double>();
  }
  *out = std::move(b);
  return OkStatus();
}

StatusOr<std::vector<long long>> BranchSteps(const BranchStudy& study, long long total_steps,
                                             long long b0) {
  std::vector<long long> steps;
  const std::string& f = study.points_field;
  switch (study.points_kind) {
    case BranchStudy::Points::kAtSteps:
    case BranchStudy::Points::kAtSamples:
      for (size_t i = 0; i < study.points.size(); ++i) {
        const auto v = static_cast<long long>(study.points[i]);
        const long long step =
            study.points_kind == BranchStudy::Points::kAtSteps ? v : (v + b0 - 1) / b0;
        if (step >= total_steps) {
          return Bad(fmt::format("{}[{}]", f, i),
                     fmt::format("{} is at or after the trunk's end (its budget is {} steps = {} "
                                 "samples at batch {}, and it writes no checkpoint at its last "
                                 "step); branch before step {}, or give the trunk a larger budget",
                                 v, total_steps, total_steps * b0, b0, total_steps));
        }
        steps.push_back(step);
      }
      break;
    case BranchStudy::Points::kEverySamples: {
      const auto every = static_cast<long long>(study.points[0]);
      for (long long s = every; (s + b0 - 1) / b0 < total_steps; s += every) {
        steps.push_back((s + b0 - 1) / b0);
      }
      if (steps.empty()) {
        return Bad("every_samples",
                   fmt::format("{} gives no point before the trunk's end ({} samples); use a "
                               "smaller interval",
                               every, total_steps * b0));
      }
      break;
    }
    case BranchStudy::Points::kAtFractions:
      for (double fr : study.points) {
        steps.push_back(std::max<long long>(1, std::llround(fr * static_cast<double>(total_steps))));
      }
      break;
  }
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  return steps;
}

Status AddBranches(const BranchStudy& study, Plan* plan) {
  if (!study.enabled) return OkStatus();
  const size_t trunks = plan->runs.size();
  std::set<std::string> seen;
  for (const PlannedRun& r : plan->runs) seen.insert(r.id);
  for (size_t t = 0; t < trunks; ++t) {
    json& tc = plan->runs[t].config;
    // A user program (the Python client) checkpoints through run.resumable(...) and starts a
    // branch from the trunk's checkpoint as the runner does (docs/byo-program.md); it has no
    // `comm` section (the built-in runner's), so its sync is allreduce.
    if (tc.value("mode", "train") != "train") {
      return InvalidArgumentError("branch: the trunk must train (mode \"train\")");
    }
    const std::string sync =
        tc.contains("comm") && tc["comm"].is_object() && tc["comm"].contains("sync")
            ? tc["comm"]["sync"].get<std::string>()
            : std::string("allreduce");
    if (const SyncModeInfo* mode = FindSyncMode(sync); mode != nullptr && !mode->branchable) {
      return InvalidArgumentError(fmt::format(
          "base.comm.sync: \"{}\" checkpoints do not restore the run exactly (its parameter "
          "server's asynchronous arrivals are not reproducible), so no branch can start from the "
          "trunk; use {} for a branch study",
          sync, SyncModeNamesWith(&SyncModeInfo::branchable, "or", true)));
    }
    const long long b0 = tc["batch_size"].get<long long>();
    // The trunk's steps from its budget in steps or samples (base/run_values.h's LengthOf).
    run_values::RunShape shape = RunShapeOf(tc);
    shape.budget.epochs = 0;
    shape.budget.seconds = 0;
    const long long total = run_values::LengthOf(shape).total_steps;
    if (total == 0) {
      return InvalidArgumentError(
          "base.budget: a branch study's trunk needs a budget in steps or samples (its branch "
          "points are placed in them), e.g. \"budget\": {\"samples\": 65536}");
    }
    const json& lr = tc["lr"];
    if (lr["schedule"] != "constant" || lr["warmup_epochs"].get<double>() > 0) {
      return InvalidArgumentError(
          "base.lr: a branch study's trunk needs lr.schedule \"constant\" and its warmup in "
          "lr.warmup_steps (a branch keeps the trunk's LR at its point, scaled by "
          "branch.lr_rule; Merrill et al. 2025 branch from a constant-LR trunk)");
    }
    BATCHLAB_ASSIGN_OR_RETURN(std::vector<long long> steps, BranchSteps(study, total, b0));
    const long long warmup = lr["warmup_steps"].get<long long>();
    if (steps.front() <= warmup) {
      return Bad(study.points_field,
                 fmt::format("the point at trunk step {} is inside the trunk's warmup "
                             "(lr.warmup_steps {}); branch after step {}",
                             steps.front(), warmup, warmup));
    }
    const double trunk_lr =
        run_values::ScaledLr(lr["base"].get<double>(), b0, lr["base_batch_size"].get<int64_t>(),
                             lr["rule"].get<std::string>())
            .value_or(lr["base"].get<double>());
    // The trunk keeps these checkpoints for good (checkpoint is not part of its run id).
    std::set<long long> keep(steps.begin(), steps.end());
    for (const json& s : tc["checkpoint"]["at_steps"]) keep.insert(s.get<long long>());
    tc["checkpoint"]["at_steps"] = std::vector<long long>(keep.begin(), keep.end());

    const long long accum = tc["accumulation"].get<long long>();
    const long long trunk_nodes = tc["nodes"].get<long long>();
    const long long rpn = tc["ranks_per_node"].get<long long>();
    // The branches' node counts: the study's (each a branch of its own), else the trunk's.
    const std::vector<long long> node_counts =
        study.nodes.empty() ? std::vector<long long>{trunk_nodes} : study.nodes;
    for (size_t j = 0; j < study.nodes.size(); ++j) {
      long long w = 0;
      if (__builtin_mul_overflow(study.nodes[j], rpn, &w) || w > kMaxWorldSize) {
        return Bad(fmt::format("nodes[{}]", j),
                   fmt::format("world_size = nodes x ranks_per_node = {} x {} is more than {} "
                               "ranks, the largest job batchlab launches",
                               study.nodes[j], rpn, kMaxWorldSize));
      }
    }
    std::vector<long long> batches;
    for (size_t i = 0; i < study.multipliers.size(); ++i) {
      const double k = study.multipliers[i];
      const double exact = k * static_cast<double>(b0);
      const long long batch = std::llround(exact);
      if (batch < 1 || std::fabs(exact - static_cast<double>(batch)) > 1e-9 * exact) {
        return Bad(fmt::format("multipliers[{}]", i),
                   fmt::format("{} x the trunk's batch {} = {} is not a whole batch; use a k "
                               "that makes k x {} an integer",
                               k, b0, exact, b0));
      }
      for (size_t j = 0; j < node_counts.size(); ++j) {
        const long long w = node_counts[j] * rpn;
        if (batch % (w * accum) == 0) continue;
        if (study.nodes.empty()) {
          return Bad(fmt::format("multipliers[{}]", i),
                     fmt::format("{} x {} = batch {} is not divisible by world_size x "
                                 "accumulation = {} x {}; use a k whose batch is a multiple of {}",
                                 k, b0, batch, w, accum, w * accum));
        }
        return Bad(fmt::format("nodes[{}]", j),
                   fmt::format("{} nodes x {} ranks_per_node x accumulation {} = {} does not "
                               "divide the batch {} of multipliers[{}] = {}; use node counts "
                               "whose ranks divide every branch batch",
                               node_counts[j], rpn, accum, w * accum, batch, i, k));
      }
      if (study.delta_samples % batch != 0) {
        return Bad("delta_samples",
                   fmt::format("{} is not a whole number of steps at batch {} (k = {}): every "
                               "branch must see the same samples; use a multiple of every branch "
                               "batch",
                               study.delta_samples, batch, k));
      }
      batches.push_back(batch);
    }
    const PlannedRun trunk = plan->runs[t];  // a copy: push_back below moves the runs
    const std::vector<long long> seeds =
        study.seeds.empty() ? std::vector<long long>{tc["seed"].get<long long>()} : study.seeds;
    for (long long step : steps) {
      for (size_t i = 0; i < batches.size(); ++i) {
        for (double factor : study.lr_factors) {
          for (long long seed : seeds) {
            for (size_t j = 0; j < node_counts.size(); ++j) {
              PlannedRun b = trunk;
              json& c = b.config;
              c.erase("run_id");
              const long long w = node_counts[j] * rpn;
              if (!study.nodes.empty()) {  // else the trunk's (and the run id without the field's)
                c["nodes"] = node_counts[j];
                c["world_size"] = w;
                // Slots and GPUs per rank as the trunk's.
                b.slots = static_cast<int>(trunk.slots / trunk.world_size * w);
                b.gpus = static_cast<int>(trunk.gpus_per_rank * w);
                b.world_size = static_cast<int>(w);
              }
              c["batch_size"] = batches[i];
              c["local_batch_size"] = batches[i] / w;
              c["micro_batch_size"] = batches[i] / (w * accum);
              // The LR search per branch batch scales the rule's LR (factor 1: the rule's own).
              c["lr"]["base"] = factor == 1 ? trunk_lr : trunk_lr * factor;
              c["lr"]["base_batch_size"] = b0;
              c["lr"]["rule"] = study.lr_rule;
              c["lr"]["warmup_steps"] = 0;
              c["budget"] = {{"samples", study.delta_samples}};
              c["target"] = nullptr;
              c["seed"] = seed;
              c["checkpoint"]["at_steps"] = json::array();
              // Evaluations at the same samples for every k (Δ/4, Δ/2, 3Δ/4, Δ when they are
              // whole steps, else only at the end): the analysis's smoothing then covers the same
              // window.
              const long long branch_steps = study.delta_samples / batches[i];
              c["eval"]["every_steps"] =
                  branch_steps % kEvalsPerBranch == 0 ? branch_steps / kEvalsPerBranch : 0;
              c["branch"] = {{"trunk_run_id", trunk.id},
                             {"at_step", step},
                             {"at_samples", step * b0},
                             {"trunk_batch_size", b0},
                             {"multiplier", study.multipliers[i]}};
              b.id = RunIdOf(c);
              if (!seen.insert(b.id).second) continue;
              c["run_id"] = b.id;
              b.ordinal = static_cast<int>(plan->runs.size());
              b.trunk_id = trunk.id;
              b.branch_step = step;
              b.params["seed"] = std::to_string(seed);
              b.params["batch_size"] = std::to_string(batches[i]);
              b.params["branch.at_step"] = std::to_string(step);
              b.params["branch.multiplier"] = json(study.multipliers[i]).dump();
              b.params["branch.trunk_run_id"] = json(trunk.id).dump();
              b.params["branch.at_samples"] = std::to_string(step * b0);
              b.params["branch.trunk_batch_size"] = std::to_string(b0);
              if (study.lr_factors.size() > 1) b.params["branch.lr_factor"] = json(factor).dump();
              if (!study.nodes.empty()) {
                b.params["nodes"] = std::to_string(node_counts[j]);
                b.sources["nodes"] = fmt::format("branch.nodes[{}]", j);
              }
              b.sources["batch_size"] = fmt::format("branch.multipliers[{}]", i);
              b.scaled_lr =
                  run_values::ScaledLr(c["lr"]["base"].get<double>(), batches[i], b0, study.lr_rule)
                      .value_or(trunk_lr);
              b.expected_seconds =
                  std::max(1.0, trunk.expected_seconds * static_cast<double>(study.delta_samples) /
                                    static_cast<double>(total * b0));
              plan->runs.push_back(std::move(b));
            }
          }
        }
      }
    }
  }
  return OkStatus();
}

}  // namespace batchlab::orchestrator
