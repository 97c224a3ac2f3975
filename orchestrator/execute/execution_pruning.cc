// Runs that can no longer change the study's answer: the steps-to-target book (pruning.h), the
// branch study's exact pruning (branch_pruning.h) and the stall rule; stopped through the stop
// file (and prune_at), or never started (see execution.h).
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/atomic_file.h"
#include "base/run_protocol.h"
#include "orchestrator/execute/execution.h"
#include "orchestrator/plan/branch_pruning.h"

namespace batchlab::orchestrator::execution {

using results::RunState;

namespace {

// The file `stop` in an attempt folder (docs/protocol.md), written atomically: a program that
// polls it reads the whole object or no file. One that cannot be written (a full disk) is left to
// the SIGTERM that follows the grace period.
void WriteStopFile(const std::string& attempt_dir, const std::string& reason,
                   const std::string& message) {
  (void)WriteFileAtomically(protocol::StopPath(attempt_dir),
                            nlohmann::json{{"reason", reason}, {"message", message}}.dump() + "\n");
}

}  // namespace

std::optional<RunTarget> TargetOf(const nlohmann::json& config) {
  const auto t = config.find("target");
  if (t == config.end() || !t->is_object()) return std::nullopt;
  return RunTarget{t->value("metric", std::string("test_accuracy")),
                   t->value("op", std::string(">=")), t->value("value", 0.0)};
}

// Tells the pruning book what the database now knows of run i: finished runs either hit the
// target or are out; running ones are bounded by the target metric's last logged step; the
// others (failed, cancelled, timed out: they may run again from scratch) wait.
Status Execution::UpdatePrune(size_t i, Phase phase) {
  const std::optional<RunTarget> target = TargetOf(plan_.runs[i].config);
  if ((!spec_.prune && !spec_.lr_search.enabled) || !target) return OkStatus();
  BATCHLAB_ASSIGN_OR_RETURN(
      results::TargetProgress p,
      store_.TargetProgressOf(plan_.runs[i].id, target->metric, target->op, target->value));
  if (phase == Phase::kFinished) table_.SetHit(i, p.hit_step);
  if (p.hit_step && phase != Phase::kWaiting) {
    prune_.SetReached(i, *p.hit_step);
  } else if (phase == Phase::kFinished) {
    prune_.SetOut(i);
  } else if (phase == Phase::kRunning) {
    prune_.SetRunning(i, p.last_step.value_or(-1));
  } else {
    prune_.SetWaiting(i);
  }
  return OkStatus();
}

// Why run i can no longer change the answer: the steps-to-target book (pruning.h), or its
// branch point's analysis (UpdateBranchPrune); nullopt: it may.
std::optional<std::string> Execution::WhyPrune(size_t i) const {
  if (table_[i].branch_prune) return table_[i].branch_prune;
  return prune_.WhyPrune(i);
}

// A branch study's exact pruning (branch_pruning.h): at each point, once some k's gap to the
// smallest k passes the tolerance in every resample of the finished branches' last
// evaluations, the branches with a larger k are marked (never started, or asked to stop). The
// values are the analysis's: test_loss, the last branch.smooth_evals of every run that
// finished on its own terms (completed, budget_exhausted, target_reached).
Status Execution::UpdateBranchPrune() {
  // With an LR search per branch batch the analysis keeps each k's best factor, which the
  // bound below does not cover: no pruning then.
  if (!spec_.prune || !spec_.branch.enabled || spec_.branch.lr_factors.size() > 1) {
    return OkStatus();
  }
  BATCHLAB_ASSIGN_OR_RETURN(std::vector<results::RunRecord> records,
                            store_.RunsOfSweep(out_.sweep_id));
  std::map<std::string, RunState> state_of;
  for (const results::RunRecord& rec : records) state_of[rec.id] = rec.state;
  std::map<std::pair<std::string, long long>, std::map<double, std::vector<size_t>>> points;
  for (size_t i = 0; i < plan_.runs.size(); ++i) {
    const PlannedRun& r = plan_.runs[i];
    const auto branch = r.config.find("branch");
    if (r.trunk_id.empty() || branch == r.config.end() || !branch->is_object()) continue;
    points[{r.trunk_id, r.branch_step}][branch->value("multiplier", 0.0)].push_back(i);
  }
  for (const auto& [point, by_k] : points) {
    std::vector<KLosses> ks;
    for (const auto& [k, members] : by_k) {
      KLosses losses{k, {}, true};
      for (size_t i : members) {
        if (!table_[i].done()) {
          losses.complete = false;
          continue;
        }
        const auto st = state_of.find(plan_.runs[i].id);
        if (st == state_of.end() ||
            (st->second != RunState::kCompleted && st->second != RunState::kBudgetExhausted &&
             st->second != RunState::kTargetReached)) {
          continue;  // left out by the analysis too
        }
        BATCHLAB_ASSIGN_OR_RETURN(std::vector<double> last,
                                  store_.RecentValuesOf(plan_.runs[i].id, protocol::kMetricTestLoss,
                                                        spec_.branch.smooth_evals));
        if (!last.empty()) losses.seeds.push_back(std::move(last));
      }
      if (losses.complete && losses.seeds.empty()) continue;  // absent from the analysis
      ks.push_back(std::move(losses));
    }
    const std::optional<double> above = PrunableAbove(ks, spec_.branch.tolerance);
    if (!above) continue;
    for (const auto& [k, members] : by_k) {
      if (k <= *above) continue;
      for (size_t i : members) {
        if (table_[i].done() || table_[i].branch_prune) continue;
        table_.SetBranchPrune(
            i,
            fmt::format(
                "at trunk step {} the loss gap of k = {} to the smallest k passed the tolerance {} "
                "in every resample of its seeds' last evaluations, so no larger k can change the "
                "critical batch size there",
                point.second, *above, spec_.branch.tolerance));
      }
    }
  }
  return OkStatus();
}

// Asks every running run that can no longer change the answer to stop: the file `stop` in its
// attempt folder (docs/protocol.md), an event with the reason, SIGTERM after the grace period.
Status Execution::PruneRunning(double now) {
  for (InFlight& a : table_.in_flight()) {
    if (a.live.prune_sent > 0 || a.saw_end) continue;
    std::optional<std::string> why = WhyPrune(a.index);
    if (!why) continue;
    WriteStopFile(a.dir, "pruned", *why);
    a.live.prune_sent = now;
    a.prune_reason = *why;
    BATCHLAB_RETURN_IF_ERROR(store_.RecordEvent(plan_.runs[a.index].id, "prune", *why));
    Event(fmt::format("run {} asked to stop: {}", plan_.runs[a.index].id, *why));
  }
  for (InFlight& a : table_.in_flight()) ShareStopStep(a);
  return OkStatus();
}

// The opt-in stall rule (docs/spec.md "Stall rule"): a running run whose last `evals`
// evaluations of its target metric were all at the chance level or worse is asked to stop
// through the stop file, as a pruned run is (so every program that honours pruning honours
// it), and is recorded as stalled: never counted as reaching or missing the target.
Status Execution::StallIfHopeless(InFlight& a, double now) {
  if (!spec_.stall || a.live.prune_sent > 0 || a.saw_end) return OkStatus();
  const PlannedRun& r = plan_.runs[a.index];
  const std::optional<RunTarget> target = TargetOf(r.config);
  if (!target) return OkStatus();
  const Spec::StallRule& rule = *spec_.stall;
  BATCHLAB_ASSIGN_OR_RETURN(std::vector<double> last,
                            store_.RecentValuesOf(r.id, target->metric, rule.evals));
  if (static_cast<int>(last.size()) < rule.evals) return OkStatus();
  const bool higher_is_better = target->op == ">=" || target->op == ">";
  const bool hopeless = std::all_of(last.begin(), last.end(), [&](double v) {
    return !std::isfinite(v) || (higher_is_better ? v <= rule.chance : v >= rule.chance);
  });
  if (!hopeless) return OkStatus();
  const std::string why = fmt::format(
      "stalled: its last {} evaluations of {} were at the chance level ({}) or worse (the "
      "spec's stall rule)",
      rule.evals, target->metric, rule.chance);
  WriteStopFile(a.dir, "stalled", why);
  a.live.prune_sent = now;
  a.prune_reason = why;
  a.stalled = true;
  BATCHLAB_RETURN_IF_ERROR(store_.RecordEvent(r.id, "stall", why));
  Event(fmt::format("run {} asked to stop: {}", r.id, why));
  return OkStatus();
}

// Writes the bound at which run a may stop itself (pruning.h, StopFromStep) to the file
// prune_at beside its config when it changed (docs/protocol.md). The built-in runner reads it
// at each evaluation and so stops within a step of the bar, where the stop file needs the next
// read of its metrics and then the runner's next look (a run at a small batch size takes
// hundreds of steps in that time); other programs ignore it and get the stop file.
void Execution::ShareStopStep(InFlight& a) {
  if (a.live.prune_sent > 0 || a.saw_end) return;
  const std::optional<int64_t> bound = prune_.StopFromStep(a.index);
  if (!bound || *bound == a.stop_from_step) return;
  if (WriteFileAtomically(protocol::PruneAtPath(a.dir),
                          nlohmann::json{{"stop_from_step", *bound}}.dump() + "\n")
          .ok()) {
    a.stop_from_step = *bound;
  }
}

// A waiting run that can no longer change the answer: recorded as pruned, never started.
Status Execution::PruneWaiting(size_t i, const std::string& why) {
  const PlannedRun& r = plan_.runs[i];
  BATCHLAB_RETURN_IF_ERROR(store_.RecordEvent(r.id, "prune", why));
  BATCHLAB_RETURN_IF_ERROR(store_.Transition(r.id, RunState::kPruned,
                                             {std::nullopt, "pruned before it started: " + why}));
  prune_.SetOut(i);
  BATCHLAB_RETURN_IF_ERROR(table_.Transition(i, RunStage::kDone));
  ++out_.pruned;
  Event(fmt::format("run {} ({}) pruned before it started", r.id, ParamsText(r.params, " ")));
  return OkStatus();
}

}  // namespace batchlab::orchestrator::execution
