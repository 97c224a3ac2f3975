// `batchlab analyze target` (see target_section.h).
#include "analysis/sections/target_section.h"

#include <cmath>
#include <optional>
#include <set>

#include <fmt/core.h>
#include <fmt/format.h>

#include "analysis/sections/section_format.h"
#include "base/target_range.h"
#include "results/table_writer.h"

namespace batchlab::analysis {

namespace {

using nlohmann::json;

}  // namespace

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
  const char* ops[] = {">=", ">", "<=", "<"};
  if (const std::optional<UnreachableWhy> never =
          UnreachableTarget(m, ops[static_cast<int>(target.op)], target.value)) {
    Target percent = target;
    percent.value = target.value / 100;
    out.push_back(fmt::format("--target '{}': {}{}", target.ToString(), never->why,
                              never->fix.empty() ? ""
                                                 : fmt::format(" (for {}% write '{}')",
                                                               target.value, percent.ToString())));
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

std::vector<Table> TargetTables(const TargetSection& target) {
  const std::string tgt = target.target.ToString();
  Table runs{"target_runs",
             "Steps to target per run (" + tgt + ")",
             {"run_id", "run", "status", "step", "samples", "train_seconds", "compute", "flops"},
             {},
             {}};
  for (const TargetHit& h : target.hits) {
    const bool ok = h.status == HitStatus::kReached;
    runs.rows.push_back({h.run_id, h.label, HitStatusName(h.status), ok ? IntegerCell(h.step) : "",
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
    best.rows.push_back({IntegerCell(b.batch_size), IntegerCell(b.runs), IntegerCell(b.reached),
                         IntegerCell(b.never_reached), IntegerCell(b.diverged),
                         IntegerCell(b.failed), IntegerCell(b.unfinished), IntegerCell(b.no_metric),
                         IntegerCell(b.pruned), IntegerCell(b.stalled),
                         b.best ? ExactNumber(b.best_steps) : "",
                         b.best ? ExactNumber(b.best_samples) : "",
                         IntegerCell(static_cast<int64_t>(b.seed_steps.size())),
                         b.best ? b.best->run_id : "", b.best ? b.best->label : ""});
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
    lr.rows.push_back({IntegerCell(f.batch_size), f.others, ExactCell(f.lr),
                       f.lr ? ExactNumber(f.best_steps) : "", IntegerCell(f.runs),
                       IntegerCell(f.lrs), f.at_edge ? "yes" : "no"});
  }
  lr.notes.push_back(
      "Adaptive search (docs/spec.md \"LR search\"): a coarse log grid over the range, then "
      "bracketing refinement around the best; best = fewest mean steps with every seed reaching "
      "the target (empty: no LR reached it). runs: every run the search used at that batch size "
      "(pruned ones included).");
  return {best, lr, runs};
}

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
    j["samples"] = JsonNumber(h.samples);
    j["seconds"] = JsonNumber(h.seconds);
    j["compute"] = JsonNumber(ComputeIn(h, unit));
    j["rank_seconds"] = JsonNumber(h.compute);
    j["flops"] = h.flops > 0 ? json(h.flops) : json(nullptr);
  }
  return j;
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
      j["best_steps"] = JsonNumber(b.best_steps);
      j["best_samples"] = JsonNumber(b.best_samples);
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
                    {"best_steps", f.lr ? json(JsonNumber(f.best_steps)) : json(nullptr)},
                    {"runs", f.runs},
                    {"lrs_tried", f.lrs},
                    {"at_range_edge", f.at_edge}});
    }
    out["lr_search"] = {{"path", t.lr_search_path}, {"per_batch_size", lr}};
  }
  return out;
}

}  // namespace batchlab::analysis
