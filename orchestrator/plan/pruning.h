// Exact pruning for steps-to-target studies: which runs can no longer change the answer.
//
// The analysis (analysis/estimators/steps_to_target.h, docs/methods.md §2) takes, per batch size, the
// configuration (the swept values without batch size and seed) whose seeds ALL reached the
// target with the fewest mean steps; S_min, E_min and B_crit are fitted to that configuration's
// per-seed steps. A configuration c at batch size B can therefore no longer be the best once
//
//   (a) one of its seeds finished without reaching the target (it cannot have all seeds), or
//   (b) a lower bound of its mean steps — Σ over its seeds of the hit step (reached), the last
//       step at which the target metric was logged + 1 (running), or 0 (not started), divided
//       by its seed count — is strictly greater than the mean steps of another configuration at
//       B whose seeds all reached the target (the best at B can only be lower still).
//
// Stopping (or never starting) c's unreached runs then changes neither the best configuration
// nor its seeds' steps, so the best-steps table, S_min, E_min and B_crit are the same as
// without pruning. Means are compared as the analysis computes them (sum / n in double), so a
// tie is never pruned. Only the counts per outcome differ (a run becomes `pruned`).
//
//   PruneBook book;
//   book.Add("B=256 target=...", "lr.base=0.1", "3f2a...");
//   book.SetRunning(0, /*last_logged_step=*/120);
//   if (std::optional<std::string> why = book.WhyPrune(0)) Stop(0, *why);
#ifndef BATCHLAB_ORCHESTRATOR_PLAN_PRUNING_H_
#define BATCHLAB_ORCHESTRATOR_PLAN_PRUNING_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "orchestrator/spec/expansion.h"

namespace batchlab::orchestrator {

class PruneBook {
 public:
  // Adds a run; returns its index (0, 1, ...). An empty `group` never prunes (no target, or
  // pruning off). `label` names the run in reasons (its id).
  size_t Add(const std::string& group, const std::string& config, const std::string& label);
  size_t size() const { return runs_.size(); }

  void SetWaiting(size_t i);  // not started (or to be re-run): bound 0
  void SetRunning(size_t i,
                  int64_t last_logged);         // target metric last logged at this step (-1: none)
  void SetReached(size_t i, int64_t hit_step);  // met the target at this step
  void SetOut(size_t i);                        // finished without meeting the target

  // Whether another configuration of run i's group has all its seeds at the target: a bar that
  // run i can pass while it runs (so its progress is worth reading often).
  bool HasBar(size_t i) const;

  // Whether run i would start blind: another run of its group is running and no configuration
  // there has set a bar yet. Started later, it may find a bar that pruning can stop it at.
  bool WouldStartBlind(size_t i) const;
  // Whether runs i and j are compared (the same non-empty group).
  bool SameGroup(size_t i, size_t j) const {
    return !runs_[i].group.empty() && runs_[i].group == runs_[j].group;
  }

  // Why run i can no longer change the best per batch size (a sentence for the event), or
  // nullopt. Never for a run that reached the target or a run without a group.
  std::optional<std::string> WhyPrune(size_t i) const;

  // The least bound of run i (its target metric's last logged step + 1) at which (b) prunes it
  // whatever its configuration's unfinished seeds still do: they count as 0 steps, the seeds that
  // reached the target with their hit steps. As results come in it can only fall (bars fall, hit
  // steps add up), so a run stopped at an earlier value is prunable by WhyPrune then and later.
  // nullopt without a bar (or for a reached run, or one without a group). The runner stops
  // itself there (the file prune_at, docs/protocol.md) instead of waiting for the orchestrator
  // to read its metrics.
  std::optional<int64_t> StopFromStep(size_t i) const;

 private:
  enum class Kind { kWaiting, kRunning, kReached, kOut };
  struct Entry {
    std::string group, config, label;
    Kind kind = Kind::kWaiting;
    int64_t bound = 0;  // kReached: the hit step; kRunning: the least step it can still hit
  };
  // The bar run i must not pass: the lowest mean steps (sum / n in double, as the analysis
  // computes it) of another configuration of its group whose seeds all reached the target, and
  // that configuration's key. nullopt when there is none (or no group).
  struct Bar {
    double mean;
    std::string config;
  };
  std::optional<Bar> BarFor(const Entry& run) const;

  std::vector<Entry> runs_;
  std::map<std::string, std::map<std::string, std::vector<size_t>>> groups_;  // group -> config
};

// The group of a planned run when `prune` is on and it has a target: its batch size, rank layout
// (world size, nodes) and target ("" otherwise). Runs are only ever compared within a group.
std::string PruneGroup(const PlannedRun& run, bool prune);
// The analysis's configuration key: the swept values without batch size and seed.
std::string PruneConfig(const PlannedRun& run);

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_PLAN_PRUNING_H_
