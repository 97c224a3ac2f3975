// `batchlab analyze pareto` (see pareto_section.h).
#include "analysis/sections/pareto_section.h"

#include <optional>
#include <string>
#include <unordered_map>

#include <fmt/core.h>

#include "analysis/sections/recommendation.h"
#include "analysis/sections/section_format.h"

namespace batchlab::analysis {

namespace {

using nlohmann::json;

}  // namespace

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

void MarkIncomparableTimings(const std::vector<RunTiming>& timings, const TargetSection& target,
                             ParetoSection* p) {
  p->incomparable.assign(p->points.size(), "");
  // The recommendation's baseline (recommendation.h's Baseline), so "the baseline" is one run.
  const std::vector<Candidate> candidates = MeasuredCandidates(target);
  const std::optional<size_t> b = Baseline(candidates);
  if (!b) return;
  p->baseline_label = candidates[*b].label;
  std::unordered_map<std::string, const RunTiming*> by_run;  // once, not a scan per point
  for (const RunTiming& t : timings) by_run[t.run_id] = &t;
  const auto base = by_run.find(candidates[*b].run_id);
  if (base == by_run.end()) return;
  for (size_t i = 0; i < p->hits.size(); ++i) {
    const auto t = by_run.find(p->hits[i]->run_id);
    if (t != by_run.end()) p->incomparable[i] = ConditionsDiffer(*base->second, *t->second);
  }
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
    t.rows.push_back({IntegerCell(rank++), h.run_id, h.label, ExactNumber(h.seconds),
                      ExactNumber(p.points[i].compute), IntegerCell(h.batch_size),
                      IntegerCell(h.world_size), IntegerCell(h.nodes), h.lr_rule, h.optimizer});
  }
  t.notes.push_back(fmt::format(
      "{} of {} runs that reached the target are on the frontier (no other run is both faster "
      "and cheaper); frontier order: fastest first; {} {}.",
      p.frontier.size(), p.points.size(), p.compute.Note(), kTrainSecondsDefinition));
  std::string differ;
  for (size_t i : p.frontier) {
    if (i >= p.incomparable.size() || p.incomparable[i].empty()) continue;
    differ += fmt::format("{}{}: {}", differ.empty() ? "" : "; ", p.hits[i]->label,
                          p.incomparable[i]);
  }
  if (!differ.empty()) {
    t.notes.push_back(fmt::format(
        "Timings not comparable with the baseline {} (docs/methods.md, \"Same conditions\"): {}; "
        "their place on the frontier is not one of batch size and rank count alone.",
        p.baseline_label, differ));
  }
  return {t};
}

json ParetoJson(const ParetoSection& p) {
  json front = json::array();
  for (size_t i : p.frontier) {
    json h = HitJson(*p.hits[i], p.compute.unit);
    if (i < p.incomparable.size() && !p.incomparable[i].empty()) {
      h["timings_incomparable"] = p.incomparable[i];
    }
    front.push_back(std::move(h));
  }
  return {{"compute_unit", ComputeUnitName(p.compute.unit)},
          {"compute_note", p.compute.Note()},
          {"frontier", front},
          {"points", p.points.size()}};
}

}  // namespace batchlab::analysis
