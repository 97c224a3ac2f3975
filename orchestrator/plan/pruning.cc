// Exact pruning (see pruning.h, docs/spec.md "Pruning").
#include "orchestrator/plan/pruning.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace batchlab::orchestrator {

size_t PruneBook::Add(const std::string& group, const std::string& config,
                      const std::string& label) {
  runs_.push_back({group, config, label, Kind::kWaiting, 0});
  if (!group.empty()) groups_[group][config].push_back(runs_.size() - 1);
  return runs_.size() - 1;
}

void PruneBook::SetWaiting(size_t i) { runs_[i].kind = Kind::kWaiting, runs_[i].bound = 0; }

void PruneBook::SetRunning(size_t i, int64_t last_logged) {
  runs_[i].kind = Kind::kRunning;
  runs_[i].bound = last_logged < 0 ? 0 : last_logged + 1;
}

void PruneBook::SetReached(size_t i, int64_t hit_step) {
  runs_[i].kind = Kind::kReached;
  runs_[i].bound = hit_step;
}

void PruneBook::SetOut(size_t i) { runs_[i].kind = Kind::kOut, runs_[i].bound = 0; }

std::optional<PruneBook::Bar> PruneBook::BarFor(const Entry& run) const {
  if (run.group.empty()) return std::nullopt;
  std::optional<Bar> bar;
  for (const auto& [config, others] : groups_.at(run.group)) {
    if (config == run.config) continue;
    double sum = 0;
    bool all = true;
    for (size_t s : others) {
      all = all && runs_[s].kind == Kind::kReached;
      sum += static_cast<double>(runs_[s].bound);
    }
    const double mean = sum / static_cast<double>(others.size());
    if (all && (!bar || mean < bar->mean)) bar = Bar{mean, config};
  }
  return bar;
}

bool PruneBook::HasBar(size_t i) const {
  return runs_[i].kind != Kind::kReached && BarFor(runs_[i]).has_value();
}

bool PruneBook::WouldStartBlind(size_t i) const {
  const Entry& run = runs_[i];
  if (run.group.empty() || HasBar(i)) return false;
  for (const auto& [config, members] : groups_.at(run.group)) {
    for (size_t s : members) {
      if (s != i && runs_[s].kind == Kind::kRunning) return true;
    }
  }
  return false;
}

std::optional<std::string> PruneBook::WhyPrune(size_t i) const {
  const Entry& run = runs_[i];
  if (run.group.empty() || run.kind == Kind::kReached) return std::nullopt;
  const auto& configs = groups_.at(run.group);
  const std::vector<size_t>& seeds = configs.at(run.config);
  // (a) a seed finished without the target: the configuration cannot have all its seeds.
  double sum = 0;
  for (size_t s : seeds) {
    if (runs_[s].kind == Kind::kOut) {
      return fmt::format(
          "run {} of the same configuration ({}) finished without reaching the target, so this "
          "configuration cannot be the best at its batch size ({}): every seed must reach it",
          runs_[s].label, run.config.empty() ? "no other swept values" : run.config, run.group);
    }
    sum += static_cast<double>(runs_[s].bound);
  }
  // (b) its mean steps can only exceed a configuration that reached the target with all seeds.
  // Means as the analysis computes them (steps_to_target.cc): sum / n in double.
  const double lower = sum / static_cast<double>(seeds.size());
  const std::optional<Bar> bar = BarFor(run);
  if (bar && lower > bar->mean) {
    return fmt::format(
        "at {} its configuration needs at least {} steps (mean over {} seed(s), bound from the "
        "steps logged so far), more than the {} steps of {} whose seeds all reached the "
        "target: it can no longer be the best",
        run.group, lower, seeds.size(), bar->mean,
        bar->config.empty() ? "another configuration" : bar->config);
  }
  return std::nullopt;
}

std::optional<int64_t> PruneBook::StopFromStep(size_t i) const {
  const Entry& run = runs_[i];
  if (run.kind == Kind::kReached) return std::nullopt;
  const std::optional<Bar> bar = BarFor(run);
  if (!bar) return std::nullopt;
  const std::vector<size_t>& seeds = groups_.at(run.group).at(run.config);
  double reached = 0;
  for (size_t s : seeds) {
    if (s != i && runs_[s].kind == Kind::kReached) reached += static_cast<double>(runs_[s].bound);
  }
  const double n = static_cast<double>(seeds.size());
  // The least integer b >= 1 with (reached + b) / n > the bar, compared as WhyPrune compares.
  auto beats = [&](int64_t b) { return (reached + static_cast<double>(b)) / n > bar->mean; };
  int64_t b = std::max<int64_t>(1, static_cast<int64_t>(std::floor(bar->mean * n - reached)));
  while (!beats(b)) ++b;
  while (b > 1 && beats(b - 1)) --b;
  return b;
}

std::string PruneGroup(const PlannedRun& run, bool prune) {
  const auto target = run.config.find("target");
  if (!prune || target == run.config.end() || target->is_null()) return "";
  // The rank layout too: at one batch size and layout a step costs the same time and compute
  // whatever the other values, so fewer steps is also less time and compute, and pruning never
  // removes a configuration that the recommendation (which weighs rank counts by time and
  // compute) could prefer. The best steps at a batch size are still never pruned: they are the
  // best of their own layout.
  // A batch-size schedule starts at batch_size but steps at other batches later: its runs are
  // compared only with runs of the same schedule.
  const auto schedule = run.config.find("batch_schedule");
  const std::string scheduled =
      schedule == run.config.end() || schedule->is_null() ? "" : " schedule=" + schedule->dump();
  return fmt::format("batch_size={} ranks={} nodes={} target={}{}",
                     run.config.value("batch_size", int64_t{0}), run.world_size,
                     run.config.value("nodes", 1), target->dump(), scheduled);
}

std::string PruneConfig(const PlannedRun& run) {
  std::string key;
  for (const auto& [name, value] : run.params) {
    if (name == "batch_size" || name == "seed") continue;
    key += (key.empty() ? "" : ",") + name + "=" + value;
  }
  return key;
}

}  // namespace batchlab::orchestrator
