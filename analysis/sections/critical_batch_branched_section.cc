// `batchlab analyze cbs` (see critical_batch_branched_section.h).
#include "analysis/sections/critical_batch_branched_section.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "analysis/estimators/gradient_noise.h"
#include "analysis/sections/estimate_questions.h"

namespace batchlab::analysis {
namespace {

// The trunk's smoothed B_simple at `step` (the last series point at or before it).
std::optional<double> BSimpleAt(const RunData& trunk, int64_t step, double beta) {
  const std::vector<GnsSample> samples = GnsSamplesOf(trunk);
  if (samples.empty()) return std::nullopt;
  StatusOr<std::vector<GnsPoint>> series = GnsSeries(samples, beta);
  if (!series.ok()) return std::nullopt;
  std::optional<double> at;
  for (const GnsPoint& p : *series) {
    if (p.step > step) break;
    if (std::isfinite(p.b_simple) && p.b_simple > 0) at = p.b_simple;
  }
  return at;
}

int64_t LastStep(const RunData& r) {
  int64_t last = 0;
  for (const auto& [name, s] : r.metrics) {
    if (!s.empty()) last = std::max(last, s.steps.back());
  }
  return last;
}

std::string Bcrit(const CbsPoint& p) {
  if (p.censored) return "≥ " + FormatNumber(p.b_crit.value);
  return FormatNumber(p.b_crit.value);
}

std::string BcritInterval(const CbsPoint& p) {
  if (!p.interval_available) return "unavailable";
  if (p.censored) return "[" + FormatNumber(p.b_crit.low) + ", ∞)";
  return "[" + FormatNumber(p.b_crit.low) + ", " + (p.high_open ? "≥ " : "") +
         FormatNumber(p.b_crit.high) + "]";
}

}  // namespace

CbsSection AnalyzeCbs(const SweepData& sweep, const CbsSectionOptions& options) {
  CbsSection s;
  s.metric = options.metric;
  CbsOptions cbs = options.cbs;
  cbs.tolerance = options.tolerance.value_or(sweep.branch_tolerance.value_or(cbs.tolerance));
  const int smooth = options.smooth.value_or(sweep.branch_smooth_evals.value_or(1));
  s.tolerance = cbs.tolerance;
  s.smooth_evals = smooth;
  const std::vector<BranchPointData> data = BranchPointsOf(sweep, options.metric, smooth);
  std::vector<CbsPoint> first_trunk;
  for (const BranchPointData& d : data) {
    StatusOr<CbsPoint> p = EstimateCbs(d, cbs);
    if (!p.ok()) {
      s.problems.push_back(p.status().message());
      continue;
    }
    CbsTrunkPoint tp;
    tp.point = *p;
    for (const RunData& r : sweep.runs) {
      if (r.id != d.trunk_id) continue;
      tp.b_simple = BSimpleAt(r, d.at_step, options.beta);
      if (d.trunk_id == data.front().trunk_id) s.trunk_samples = LastStep(r) * r.batch_size;
    }
    // The schedule follows the branches at the trunk's own node count.
    if (d.trunk_id == data.front().trunk_id && d.nodes == 0) first_trunk.push_back(*p);
    s.points.push_back(std::move(tp));
  }
  if (!first_trunk.empty() && s.trunk_samples > 0) {
    s.schedule = RecommendSchedule(first_trunk, first_trunk.front().trunk_batch, s.trunk_samples,
                                   options.margin);
  }
  return s;
}

std::vector<Table> CbsTables(const CbsSection& s, bool questions) {
  // A `nodes` column only when some branches ran at another node count than their trunk
  // (branch.nodes): "-" where a point's branches kept the trunk's.
  bool other_nodes = false;
  for (const CbsTrunkPoint& tp : s.points) other_nodes = other_nodes || tp.point.nodes != 0;
  auto nodes_of = [](const CbsPoint& p) {
    return p.nodes == 0 ? std::string("-") : std::to_string(p.nodes);
  };
  Table curve{"cbs_over_training",
              "Critical batch size over training (branch study)",
              {"trunk", "at_step", "samples_seen", "B0", "b_crit", "b_crit_low", "b_crit_high",
               "interval", "merrill_eps_rule", "b_simple", "bootstrap"},
              {},
              {}};
  Table per_k{"cbs_branches",
              "Branch losses after the same samples",
              {"at_step", "k", "batch_size", "seeds", "loss", "gap", "gap_low", "gap_high"},
              {},
              {}};
  if (other_nodes) {
    curve.columns.insert(curve.columns.begin() + 2, "nodes");
    per_k.columns.insert(per_k.columns.begin() + 1, "nodes");
  }
  for (const CbsTrunkPoint& tp : s.points) {
    const CbsPoint& p = tp.point;
    const size_t first_k_row = per_k.rows.size();
    curve.rows.push_back({p.trunk_id, std::to_string(p.at_step), std::to_string(p.at_samples),
                          std::to_string(p.trunk_batch), Bcrit(p),
                          p.interval_available ? FormatNumber(p.b_crit.low) : "-",
                          !p.interval_available       ? "-"
                          : p.censored || p.high_open ? "inf"
                                                      : FormatNumber(p.b_crit.high),
                          BcritInterval(p),
                          (p.merrill_censored ? "≥ " : "") + std::to_string(p.merrill_batch),
                          tp.b_simple ? FormatNumber(*tp.b_simple) : "-", p.bootstrap});
    for (const CbsPerK& k : p.per_k) {
      per_k.rows.push_back({std::to_string(p.at_step), FormatNumber(k.multiplier),
                            std::to_string(k.batch_size), std::to_string(k.seeds),
                            FormatNumber(k.loss), FormatNumber(k.gap.value),
                            FormatNumber(k.gap.low), FormatNumber(k.gap.high)});
    }
    if (other_nodes) {
      curve.rows.back().insert(curve.rows.back().begin() + 2, nodes_of(p));
      for (size_t i = first_k_row; i < per_k.rows.size(); ++i) {
        per_k.rows[i].insert(per_k.rows[i].begin() + 1, nodes_of(p));
      }
    }
    if (!p.lr_factor_by_k.empty()) {
      std::vector<std::string> chosen;
      for (const auto& [k, factor] : p.lr_factor_by_k) {
        chosen.push_back(fmt::format("k={}: x{}", FormatNumber(k), FormatNumber(factor)));
      }
      per_k.notes.push_back(fmt::format(
          "At step {}, the LR search per branch batch kept for each k the LR factor (times the "
          "rule's LR) with the lowest mean loss: {}.",
          p.at_step, fmt::join(chosen, ", ")));
    }
  }
  curve.notes.push_back(fmt::format(
      "b_crit: where a monotone fit of the loss gap to the smallest branch batch, linear in log "
      "k, passes the tolerance {} ({}); interval: percentile bootstrap over the fit (the column "
      "bootstrap says what was resampled); "
      "\"≥\": censored, even the largest batch recovered. merrill_eps_rule: the largest grid "
      "batch within the tolerance (Merrill et al. 2025). b_simple: the trunk's noise scale at "
      "the point (McCandlish et al. 2018).",
      s.tolerance, s.metric));
  if (other_nodes) {
    curve.notes.push_back(
        "nodes: the node count the point's branches ran at where it is not their trunk's "
        "(branch.nodes; \"-\": the trunk's); each count is a curve of its own, started from the "
        "trunk's checkpoint re-sharded (docs/protocol.md, \"Elastic resume\"), and the schedule "
        "follows the trunk's.");
  }
  for (const std::string& p : s.problems) curve.notes.push_back("not estimated: " + p);
  if (questions) {
    for (const std::string& n : EstimateQuestionNotes()) curve.notes.push_back(n);
  }
  std::vector<Table> out = {curve, per_k};
  if (s.schedule) {
    Table sched{"cbs_schedule", "Recommended batch-size schedule", {"from_samples", "batch_size"}, {}, {}};
    for (size_t i = 0; i < s.schedule->batches.size(); ++i) {
      sched.rows.push_back(
          {std::to_string(s.schedule->from_samples[i]), std::to_string(s.schedule->batches[i])});
    }
    sched.notes.push_back(fmt::format(
        "{} steps for {} samples against {} at the constant trunk batch: {} fewer "
        "(predicted; `batchlab analyze schedules` measures it once the schedule ran).",
        s.schedule->steps, s.schedule->total_samples, s.schedule->constant_steps,
        WholePercent(s.schedule->saving)));
    out.push_back(sched);
  }
  return out;
}

nlohmann::json CbsJson(const CbsSection& s) {
  nlohmann::json j = {
      {"metric", s.metric}, {"tolerance", s.tolerance}, {"smooth_evals", s.smooth_evals}};
  nlohmann::json pts = nlohmann::json::array();
  for (const CbsTrunkPoint& tp : s.points) {
    const CbsPoint& p = tp.point;
    nlohmann::json ks = nlohmann::json::array();
    for (const CbsPerK& k : p.per_k) {
      ks.push_back({{"multiplier", k.multiplier},
                    {"batch_size", k.batch_size},
                    {"seeds", k.seeds},
                    {"loss", k.loss},
                    {"gap", k.gap.value},
                    {"gap_low", k.gap.low},
                    {"gap_high", k.gap.high}});
    }
    nlohmann::json b = {{"confidence", p.b_crit.confidence},
                        {"interval_available", p.interval_available}};
    b["low"] = p.interval_available ? nlohmann::json(p.b_crit.low) : nlohmann::json(nullptr);
    // Censored: a bound, never a number.
    b["value"] = p.censored ? nlohmann::json(nullptr) : nlohmann::json(p.b_crit.value);
    b["at_least"] = p.censored ? nlohmann::json(p.b_crit.value) : nlohmann::json(nullptr);
    b["high"] = p.censored || p.high_open || !p.interval_available
                    ? nlohmann::json(nullptr)
                    : nlohmann::json(p.b_crit.high);
    pts.push_back({{"trunk_run_id", p.trunk_id},
                   {"at_step", p.at_step},
                   {"samples_seen", p.at_samples},
                   {"trunk_batch_size", p.trunk_batch},
                   {"b_crit", b},
                   {"merrill", {{"batch_size", p.merrill_batch}, {"censored", p.merrill_censored}}},
                   {"b_simple", tp.b_simple ? nlohmann::json(*tp.b_simple) : nullptr},
                   {"bootstrap", p.bootstrap},
                   {"branches", ks},
                   {"reading", p.reading}});
    // Only where the branches ran at another node count than the trunk's (branch.nodes).
    if (p.nodes != 0) pts.back()["nodes"] = p.nodes;
  }
  j["points"] = pts;
  j["problems"] = s.problems;
  if (s.schedule) {
    j["schedule"] = {{"from_samples", s.schedule->from_samples},
                     {"batch_sizes", s.schedule->batches},
                     {"total_samples", s.schedule->total_samples},
                     {"steps", s.schedule->steps},
                     {"constant_steps", s.schedule->constant_steps},
                     {"predicted_saving", s.schedule->saving}};
  }
  return j;
}

std::vector<std::string> CbsLines(const CbsSection& s) {
  std::vector<std::string> out;
  for (const CbsTrunkPoint& tp : s.points) {
    std::string line = tp.point.reading;
    if (tp.b_simple && !tp.point.censored) {
      line += fmt::format(" B_simple there is {} ({}x).", FormatNumber(*tp.b_simple),
                          FormatNumber(*tp.b_simple / tp.point.b_crit.value, 2));
    }
    out.push_back(line);
  }
  if (s.schedule && s.schedule->batches.size() > 1) {
    out.push_back(fmt::format(
        "Following the curve, the batch grows from {} to {}: {} steps instead of {} ({} "
        "fewer, predicted).",
        s.schedule->batches.front(), s.schedule->batches.back(), s.schedule->steps,
        s.schedule->constant_steps, WholePercent(s.schedule->saving)));
    const run_values::BatchSchedule run = ToRunSchedule(*s.schedule);
    out.push_back(fmt::format(
        "To measure it, run the trunk's config with \"batch_size\": {}, \"batch_schedule\": "
        "{{\"at_samples\": [{}], \"batch_sizes\": [{}]}} and compare with `batchlab analyze "
        "schedules`.",
        run.first_batch, fmt::join(run.at_samples, ", "), fmt::join(run.batch_sizes, ", ")));
  } else if (s.schedule) {
    out.push_back("The measured curve never passes twice the trunk's batch: no schedule beats "
                  "the constant batch here.");
  }
  return out;
}

}  // namespace batchlab::analysis
