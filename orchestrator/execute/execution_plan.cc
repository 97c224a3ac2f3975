// The plan as it grows and moves: the queue's order, held branches released once their trunk's
// checkpoint exists, and the LR search's rounds added as ordinary runs (see execution.h).
#include <algorithm>
#include <cassert>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <boost/filesystem.hpp>

#include "base/run_protocol.h"
#include "orchestrator/execute/execution.h"
#include "orchestrator/spec/lr_search.h"

namespace batchlab::orchestrator::execution {

namespace fs = boost::filesystem;
using results::RunState;

// Run i joins the queue, to start no earlier than `not_before` (0: at once).
Status Execution::Enqueue(size_t i, double not_before) {
  const PlannedRun& r = plan_.runs[i];
  BATCHLAB_RETURN_IF_ERROR(table_.Transition(i, RunStage::kQueued));
  queue_.Add({static_cast<int>(i), r.slots, r.expected_seconds, not_before, Priority(i), r.gpus});
  return OkStatus();
}

// Queue order: with pruning, every configuration's first seed before any second seed, so a
// configuration that reaches the target early sets the bar for the others; with an LR search,
// within a seed rank the largest LRs of every search point first (LrStartRank), so the bar is
// usually set before a point's slow small LRs start.
int Execution::Priority(size_t i) const {
  if (!spec_.prune) return 0;
  if (!plan_.runs[i].trunk_id.empty()) {
    // A branch: smaller multipliers first, so the gap that prunes the larger ones is known
    // before they start (UpdateBranchPrune).
    const double k = plan_.runs[i].config["branch"].value("multiplier", 0.0);
    return static_cast<int>(std::count_if(spec_.branch.multipliers.begin(),
                                          spec_.branch.multipliers.end(),
                                          [k](double m) { return m < k; }));
  }
  const auto it =
      std::find(spec_.seeds.begin(), spec_.seeds.end(), plan_.runs[i].config.value("seed", 0LL));
  const int seed_rank = static_cast<int>(it - spec_.seeds.begin());
  if (!spec_.lr_search.enabled) return seed_rank;
  const int lr_rank =
      LrStartRank(spec_.lr_search, std::stod(plan_.runs[i].params.at(spec_.lr_search.path)));
  return seed_rank * (spec_.lr_search.grid + 1) + lr_rank;
}

// Held branches whose trunk checkpoint now exists (every rank's shard) join the queue, while
// the trunk goes on; those whose trunk ended without it fail, saying why. Checked at most every
// 0.2 s (and at once when nothing else runs).
Status Execution::ReleaseBranches(double now) {
  if (now - last_branch_check_ < 0.2 && !(queue_.empty() && table_.in_flight().empty())) {
    return OkStatus();
  }
  last_branch_check_ = now;
  for (size_t i : table_.Held()) {
    const PlannedRun& r = plan_.runs[i];
    if (table_[i].branch_prune) {
      BATCHLAB_RETURN_IF_ERROR(PruneWaiting(i, *table_[i].branch_prune));
      continue;
    }
    BATCHLAB_ASSIGN_OR_RETURN(std::vector<std::string> dirs, TrunkDirs(r.trunk_id));
    // Every shard the trunk writes: a branch may run at another rank count (branch.nodes).
    const std::optional<size_t> writer = table_.IndexOf(r.trunk_id);
    const int trunk_world = writer ? plan_.runs[*writer].world_size : r.world_size;
    bool ready = false;
    for (const std::string& d : dirs) {
      bool all = true;
      for (int rank = 0; rank < trunk_world && all; ++rank) {
        all = fs::exists(protocol::CheckpointShardPath(d, r.branch_step, rank));
      }
      ready = ready || all;
    }
    if (ready) {
      BATCHLAB_RETURN_IF_ERROR(Enqueue(i, 0));
      Event(fmt::format("run {} ({}) queued: trunk {} has its checkpoint at step {}", r.id,
                        ParamsText(r.params, " "), r.trunk_id, r.branch_step));
      continue;
    }
    const std::optional<size_t> trunk = table_.IndexOf(r.trunk_id);
    if (trunk && table_[*trunk].done()) {
      const std::string why = fmt::format(
          "trunk run {} ended without a checkpoint at step {} (it stopped before the branch "
          "point, e.g. at its target, or failed); see its log",
          r.trunk_id, r.branch_step);
      BATCHLAB_RETURN_IF_ERROR(store_.RecordEvent(r.id, "branch", why));
      BATCHLAB_RETURN_IF_ERROR(store_.Transition(r.id, RunState::kFailed, {std::nullopt, why}));
      BATCHLAB_RETURN_IF_ERROR(table_.Transition(i, RunStage::kDone));
      ++out_.failed;
      Event(fmt::format("run {} ({}) failed: {}", r.id, ParamsText(r.params, " "), why));
    }
  }
  return OkStatus();
}

// Registers plan_.runs[i] with the pruning book and the LR search (constructor, new rounds).
void Execution::Track(size_t i) {
  const PlannedRun& r = plan_.runs[i];
  // With an LR search, runs are compared only within their search point, so pruning never
  // changes which LR is best there (and so never the search's path).
  std::string group = PruneGroup(r, spec_.prune);
  if (!group.empty() && spec_.lr_search.enabled) group += " " + SearchGroup(r);
  const size_t book_index = prune_.Add(group, PruneConfig(r), r.id);
  const size_t table_index = table_.Add(
      r.id, spec_.lr_search.enabled ? std::optional<std::string>(SearchGroup(r)) : std::nullopt);
  // The table, the book and the plan align.
  assert(book_index == i && table_index == i);
  (void)book_index;
  (void)table_index;
}

// The LR search's unit: the run's swept values without the searched path and the seed.
std::string Execution::SearchGroup(const PlannedRun& r) const {
  std::string key;
  for (const auto& [name, value] : r.params) {
    if (name != "seed" && name != spec_.lr_search.path) key += name + "=" + value + ",";
  }
  return key;
}

// Once every run of run i's search group is done, adds the search's next round (lr_search.h)
// as ordinary runs: in the database, queued, pruned like any other. On resume the rounds the
// database already holds are re-derived from their results, in the same order.
Status Execution::AdvanceSearch(size_t i) {
  if (!spec_.lr_search.enabled) return OkStatus();
  const std::string group = table_[i].search_group;
  for (;;) {
    const std::vector<size_t>& members = table_.SearchGroupRuns(group);
    if (!std::all_of(members.begin(), members.end(), [&](size_t m) { return table_[m].done(); })) {
      return OkStatus();
    }
    // Per LR: the mean hit step over its seeds when every seed reached the target.
    std::map<std::string, std::vector<size_t>> by_lr;
    for (size_t m : members) by_lr[plan_.runs[m].params.at(spec_.lr_search.path)].push_back(m);
    std::vector<LrResult> tried;
    for (const auto& [text, runs] : by_lr) {
      LrResult r{std::stod(text), std::nullopt};
      double sum = 0;
      bool all = true;
      for (size_t m : runs) {
        all = all && table_[m].hit.has_value();
        if (table_[m].hit) sum += static_cast<double>(*table_[m].hit);
      }
      if (all) r.steps = sum / static_cast<double>(runs.size());
      tried.push_back(r);
    }
    const std::vector<double> next = NextLrs(spec_.lr_search, tried, table_.SearchRounds(group));
    if (next.empty()) return OkStatus();
    table_.AddSearchRound(group);
    // One new run per seed, from the runs of the best LR (same batch size and other values).
    const std::optional<double> best = BestLr(tried);
    std::vector<size_t> templates;
    for (const auto& [text, runs] : by_lr) {
      if (std::stod(text) == *best) templates = runs;
    }
    std::vector<size_t> added;
    for (double lr : next) {
      for (size_t t : templates) {
        PlannedRun run = WithSweptValue(plan_.runs[t], spec_.lr_search.path, nlohmann::json(lr),
                                        static_cast<int>(plan_.runs.size()));
        plan_.runs.push_back(std::move(run));
        Track(plan_.runs.size() - 1);
        added.push_back(plan_.runs.size() - 1);
      }
    }
    ++out_.search_rounds;
    out_.total += static_cast<int>(added.size());
    Event(fmt::format("LR search ({}): best {} = {} so far; adds {}", group, spec_.lr_search.path,
                      *best, fmt::join(next, ", ")));
    BATCHLAB_RETURN_IF_ERROR(AddRuns(added));
  }
}

}  // namespace batchlab::orchestrator::execution
