// Steps to target per run and best per batch size (see steps_to_target.h, docs/methods.md §2).
#include "analysis/estimators/steps_to_target.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>

#include <fmt/core.h>

#include "results/store.h"

namespace batchlab::analysis {

bool Target::Met(double x) const {
  if (std::isnan(x)) return false;
  switch (op) {
    case CompareOp::kGreaterEqual:
      return x >= value;
    case CompareOp::kGreater:
      return x > value;
    case CompareOp::kLessEqual:
      return x <= value;
    case CompareOp::kLess:
      return x < value;
  }
  return false;
}

std::string Target::ToString() const {
  const char* ops[] = {">=", ">", "<=", "<"};
  return fmt::format("{}{}{}", metric, ops[static_cast<int>(op)], value);
}

StatusOr<Target> ParseTarget(const std::string& text) {
  const size_t pos = text.find_first_of("<>");
  auto bad = [&](const std::string& why) {
    return InvalidArgumentError(
        fmt::format("--target '{}': {}; write METRIC OP VALUE with OP one of >= > <= <, e.g. "
                    "'test_accuracy>=0.85' or 'test_loss<=0.4'",
                    text, why));
  };
  if (pos == std::string::npos) return bad("no comparison operator");
  Target t;
  auto trim = [](std::string s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
    size_t i = 0;
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    return s.substr(i);
  };
  t.metric = trim(text.substr(0, pos));
  if (t.metric.empty()) return bad("no metric name");
  size_t vpos = pos + 1;
  const bool eq = vpos < text.size() && text[vpos] == '=';
  if (eq) ++vpos;
  t.op = text[pos] == '>' ? (eq ? CompareOp::kGreaterEqual : CompareOp::kGreater)
                          : (eq ? CompareOp::kLessEqual : CompareOp::kLess);
  const std::string v = trim(text.substr(vpos));
  char* end = nullptr;
  t.value = std::strtod(v.c_str(), &end);
  if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(t.value)) {
    return bad(fmt::format("'{}' is not a finite number", v));
  }
  return t;
}

const char* HitStatusName(HitStatus s) {
  switch (s) {
    case HitStatus::kReached:
      return "reached";
    case HitStatus::kNeverReached:
      return "never_reached";
    case HitStatus::kDiverged:
      return "diverged";
    case HitStatus::kFailed:
      return "failed";
    case HitStatus::kUnfinished:
      return "unfinished";
    case HitStatus::kNoMetric:
      return "no_metric";
    case HitStatus::kPruned:
      return "pruned";
    case HitStatus::kStalled:
      return "stalled";
  }
  return "unknown";
}

namespace {

// The value of `s` at `step`: exact match, else linear interpolation, else the nearest end.
double ValueAt(const Series& s, int64_t step) {
  auto it = std::lower_bound(s.steps.begin(), s.steps.end(), step);
  const size_t i = static_cast<size_t>(it - s.steps.begin());
  if (i < s.size() && s.steps[i] == step) return s.values[i];
  if (i == 0) return s.values.front();
  if (i == s.size()) return s.values.back();
  const double f =
      static_cast<double>(step - s.steps[i - 1]) / static_cast<double>(s.steps[i] - s.steps[i - 1]);
  return s.values[i - 1] + f * (s.values[i] - s.values[i - 1]);
}

// Rank-seconds to `step` from the cumulative `seconds` series: each rank segment's share of it
// at that segment's rank count.
double WallRankSeconds(const RunData& run, const Series& wall, int64_t step) {
  const auto at = [&wall](int64_t s) { return s > 0 ? ValueAt(wall, s) : 0.0; };
  double total = 0;
  int64_t from = 0;
  int k = run.world_size;
  for (const RunData::RankSegment& s : run.rank_segments) {
    if (s.after_step >= step) break;
    if (s.after_step > from) total += (at(s.after_step) - at(from)) * k;
    from = std::max(from, s.after_step);
    k = s.world_size;
  }
  return total + (at(step) - at(from)) * k;
}

// Training seconds to `step` (Σ step_seconds, else the `seconds` metric) and, in *rank_seconds,
// each step's seconds at the rank count that trained it (slurm.elastic: RunData::rank_segments).
double SecondsTo(const RunData& run, int64_t step, double* rank_seconds) {
  const Series* step_seconds = run.Metric("step_seconds");
  const Series* wall = run.Metric("seconds");
  *rank_seconds = 0;
  if (step_seconds && !step_seconds->empty()) {
    double sum = 0;
    for (size_t j = 0; j < step_seconds->size() && step_seconds->steps[j] <= step; ++j) {
      sum += step_seconds->values[j];
      *rank_seconds += step_seconds->values[j] * run.WorldSizeAt(step_seconds->steps[j]);
    }
    return sum;
  }
  if (wall && !wall->empty()) {
    *rank_seconds = WallRankSeconds(run, *wall, step);
    return ValueAt(*wall, step);
  }
  return 0;
}

// The last step the run logged (any metric).
int64_t LastLoggedStep(const RunData& run) {
  int64_t last = 0;
  for (const auto& [name, series] : run.metrics) {
    if (!series.empty()) last = std::max(last, series.steps.back());
  }
  return last;
}

bool HasNonFiniteLoss(const RunData& run) {
  const Series* loss = run.Metric("loss");
  if (!loss) return false;
  return std::any_of(loss->values.begin(), loss->values.end(),
                     [](double v) { return !std::isfinite(v); });
}

}  // namespace

TargetHit FindTargetHit(const RunData& run, const Target& target) {
  TargetHit hit;
  hit.run_id = run.id;
  hit.label = RunLabel(run);
  hit.config_key = ConfigKey(run, {"batch_size", "seed"});
  hit.detail = SweptDetail(run);
  hit.batch_size = run.batch_size;
  hit.world_size = run.world_size;
  hit.nodes = run.nodes;
  hit.seed = run.seed;
  hit.lr_rule = run.lr_rule;
  hit.optimizer = run.optimizer;

  hit.flops_per_step = run.flops_per_step;
  const Series* m = run.Metric(target.metric);
  if (m) {
    for (size_t i = 0; i < m->size(); ++i) {
      if (!target.Met(m->values[i])) continue;
      hit.status = HitStatus::kReached;
      hit.step = m->steps[i];
      hit.resolution = i > 0 ? m->steps[i] - m->steps[i - 1] : m->steps[i];
      const Series* samples = run.Metric("samples");
      hit.samples = samples && !samples->empty()
                        ? ValueAt(*samples, hit.step)
                        : static_cast<double>(hit.step) * static_cast<double>(run.batch_size);
      double rank_seconds = 0;
      hit.seconds = SecondsTo(run, hit.step, &rank_seconds);
      hit.compute = run.rank_segments.empty() ? hit.seconds * run.world_size : rank_seconds;
      hit.flops = static_cast<double>(hit.step) * run.flops_per_step;
      return hit;
    }
  }
  using results::RunState;
  const StatusOr<RunState> parsed = results::ParseRunState(run.state);
  const auto is = [&parsed](std::initializer_list<RunState> states) {
    return parsed.ok() && std::find(states.begin(), states.end(), *parsed) != states.end();
  };
  if (is({RunState::kPruned})) {
    hit.status = HitStatus::kPruned;
  } else if (is({RunState::kStalled})) {
    hit.status = HitStatus::kStalled;
  } else if (is({RunState::kDiverged}) || HasNonFiniteLoss(run)) {
    hit.status = HitStatus::kDiverged;
  } else if (run.state.empty() || is({RunState::kPending, RunState::kRunning})) {
    hit.status = HitStatus::kUnfinished;
  } else if (is({RunState::kFailed, RunState::kTimedOut, RunState::kCancelled})) {
    hit.status = HitStatus::kFailed;
  } else if (!m || m->empty()) {
    hit.status = HitStatus::kNoMetric;
  } else {
    hit.status = HitStatus::kNeverReached;
  }
  if (!run.rank_segments.empty()) SecondsTo(run, LastLoggedStep(run), &hit.spent_rank_seconds);
  return hit;
}

std::vector<TargetHit> FindTargetHits(const std::vector<RunData>& runs, const Target& target) {
  std::vector<TargetHit> out;
  out.reserve(runs.size());
  for (const RunData& r : runs) out.push_back(FindTargetHit(r, target));
  return out;
}

std::vector<BatchBest> BestPerBatchSize(const std::vector<TargetHit>& hits) {
  // batch size -> config key -> the seeds' hits
  std::map<int64_t, std::map<std::string, std::vector<const TargetHit*>>> groups;
  std::map<int64_t, BatchBest> out;
  for (const TargetHit& h : hits) {
    groups[h.batch_size][h.config_key].push_back(&h);
    BatchBest& b = out[h.batch_size];
    b.batch_size = h.batch_size;
    ++b.runs;
    switch (h.status) {
      case HitStatus::kReached:
        ++b.reached;
        break;
      case HitStatus::kNeverReached:
        ++b.never_reached;
        break;
      case HitStatus::kDiverged:
        ++b.diverged;
        break;
      case HitStatus::kFailed:
        ++b.failed;
        break;
      case HitStatus::kUnfinished:
        ++b.unfinished;
        break;
      case HitStatus::kNoMetric:
        ++b.no_metric;
        break;
      case HitStatus::kPruned:
        ++b.pruned;
        break;
      case HitStatus::kStalled:
        ++b.stalled;
        break;
    }
  }
  for (auto& [batch, configs] : groups) {
    BatchBest& b = out[batch];
    for (auto& [key, seeds] : configs) {
      const bool all = std::all_of(seeds.begin(), seeds.end(), [](const TargetHit* h) {
        return h->status == HitStatus::kReached;
      });
      if (!all) continue;
      double steps = 0, samples = 0;
      const TargetHit* fastest = seeds.front();
      for (const TargetHit* h : seeds) {
        steps += static_cast<double>(h->step);
        samples += h->samples;
        if (h->step < fastest->step) fastest = h;
      }
      steps /= static_cast<double>(seeds.size());
      samples /= static_cast<double>(seeds.size());
      if (b.best && steps >= b.best_steps) continue;
      b.best = *fastest;
      b.best_steps = steps;
      b.best_samples = samples;
      b.seed_steps.clear();
      b.seed_resolution.clear();
      for (const TargetHit* h : seeds) {
        b.seed_steps.push_back(static_cast<double>(h->step));
        b.seed_resolution.push_back(static_cast<double>(h->resolution));
      }
    }
  }
  std::vector<BatchBest> v;
  for (auto& [batch, b] : out) v.push_back(std::move(b));
  return v;
}

}  // namespace batchlab::analysis
