// The fitted step-time model and its check (see step_model.h, docs/methods.md §6).
#include "analysis/estimators/step_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include <fmt/core.h>

#include "analysis/estimators/bootstrap.h"
#include "analysis/data/table.h"

namespace batchlab::analysis {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// "B=256 K=2" and the configuration's swept values (the label of its first run without them).
std::string ConfigLabel(const RunTiming& t) {
  std::string label = fmt::format("B={} K={}", t.batch_size, t.world_size);
  if (!t.strong_key.empty()) label += " " + t.strong_key;
  return label;
}

}  // namespace

double StepModel::Predict(const RunTiming& t, bool floor) const {
  auto at_k = compute_at_k.find({t.strong_key, t.world_size});
  const ComputeModel* c = at_k != compute_at_k.end() ? &at_k->second : ComputeOf(t.strong_key);
  if (c == nullptr) return kNaN;
  const double b = static_cast<double>(t.local_batch_size);
  double s = floor ? c->StepSeconds(b) : c->LineSeconds(b);
  if (t.world_size > 1) {
    if (!comm || t.parameters <= 0) return kNaN;
    s += RingAllreduceSeconds(t.world_size, GradientBytes(t.parameters), comm->alpha_seconds,
                              comm->bandwidth_bytes_per_second);
  }
  return s;
}

const ComputeModel* StepModel::ComputeOf(const std::string& key) const {
  auto it = compute.find(key);
  return it == compute.end() ? nullptr : &it->second;
}

const ComputeModel* StepModel::ComputeForOneRankPerNode(const std::string& key) const {
  auto one = compute_at_k.find({key, 1});
  return one != compute_at_k.end() ? &one->second : ComputeOf(key);
}

namespace {

// A compute model from the runs' means only (no copies of their strings or step samples).
StatusOr<ComputeModel> FitComputeOf(const std::vector<const RunTiming*>& runs) {
  std::vector<RunTiming> slim(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    slim[i].local_batch_size = runs[i]->local_batch_size;
    slim[i].step_seconds = runs[i]->step_seconds;
    slim[i].comm_seconds = runs[i]->comm_seconds;
  }
  return FitComputeModel(slim);
}

StatusOr<StepModel> FitStepModelOf(const std::vector<const RunTiming*>& timings) {
  if (timings.empty()) {
    return FailedPreconditionError(
        "no run logged step_seconds, so there is no measured step time to fit a model to");
  }
  StepModel m;
  std::map<std::string, std::vector<const RunTiming*>> by_key;
  std::map<std::pair<std::string, int>, std::vector<const RunTiming*>> by_key_k;
  std::vector<AllreduceObservation> obs;
  for (const RunTiming* t : timings) {
    by_key[t->strong_key].push_back(t);
    by_key_k[{t->strong_key, t->world_size}].push_back(t);
    if (t->world_size >= 2 && t->parameters > 0 && t->comm_seconds > 0) {
      obs.push_back({t->world_size, GradientBytes(t->parameters), t->comm_seconds, t->nodes});
    }
  }
  for (const auto& [key, runs] : by_key) {
    StatusOr<ComputeModel> c = FitComputeOf(runs);
    if (c.ok()) m.compute[key] = *c;
  }
  for (const auto& [key, runs] : by_key_k) {
    StatusOr<ComputeModel> c = FitComputeOf(runs);
    if (c.ok()) m.compute_at_k[key] = *c;
  }
  StatusOr<AlphaBetaFit> ab = FitRingAllreduceOrBandwidth(obs);
  if (ab.ok()) m.comm = *ab;
  return m;
}

}  // namespace

StatusOr<StepModel> FitStepModel(const std::vector<RunTiming>& timings) {
  std::vector<const RunTiming*> p;
  p.reserve(timings.size());
  for (const RunTiming& t : timings) p.push_back(&t);
  return FitStepModelOf(p);
}

ModelCheck CheckStepModel(const std::vector<RunTiming>& timings) {
  ModelCheck check;
  StatusOr<StepModel> all = FitStepModel(timings);
  if (!all.ok()) {
    check.status = all.status();
    return check;
  }
  if (all->comm) check.comm_undetermined = all->comm->undetermined;
  // The configurations: (model, K, B) -> indices of its runs.
  std::map<std::tuple<std::string, int, int64_t>, std::vector<size_t>> configs;
  for (size_t i = 0; i < timings.size(); ++i) {
    const RunTiming& t = timings[i];
    configs[{t.strong_key, t.world_size, t.batch_size}].push_back(i);
  }
  double ss = 0;
  int fitted_n = 0;
  std::vector<double> held;
  for (const auto& [key, idx] : configs) {
    const RunTiming& first = timings[idx.front()];
    ModelCheckRow row;
    row.label = ConfigLabel(first);
    row.key = first.strong_key;
    row.world_size = first.world_size;
    row.batch_size = first.batch_size;
    row.local_batch_size = first.local_batch_size;
    row.runs = static_cast<int>(idx.size());
    for (size_t i : idx) row.measured += timings[i].step_seconds;
    row.measured /= static_cast<double>(idx.size());
    row.fitted = all->Predict(first);
    row.fitted_error = (row.fitted - row.measured) / row.measured;
    if (std::isfinite(row.fitted_error)) {
      ss += row.fitted_error * row.fitted_error;
      ++fitted_n;
      check.fitted_max = std::max(check.fitted_max, std::fabs(row.fitted_error));
    }
    // Held out: the model of every other configuration.
    std::vector<const RunTiming*> rest;
    rest.reserve(timings.size());
    for (const RunTiming& t : timings) {
      if (t.strong_key != first.strong_key || t.world_size != first.world_size ||
          t.batch_size != first.batch_size) {
        rest.push_back(&t);
      }
    }
    row.held_out = kNaN;
    row.held_out_error = kNaN;
    StatusOr<StepModel> without = FitStepModelOf(rest);
    if (!without.ok()) {
      row.held_out_note = "no other configuration to fit on";
    } else if (without->ComputeOf(first.strong_key) == nullptr) {
      row.held_out_note = "its model has no other measured configuration";
    } else if (first.world_size > 1 && !without->comm) {
      row.held_out_note = "no other multi-rank configuration to fit the allreduce on";
    } else {
      row.held_out = without->Predict(first, /*floor=*/false);
      row.held_out_error = (row.held_out - row.measured) / row.measured;
      if (std::isfinite(row.held_out_error)) {
        held.push_back(std::fabs(row.held_out_error));
      } else {
        row.held_out_note = "the model size is unknown (pass --parameters)";
      }
    }
    check.rows.push_back(row);
  }
  check.fitted_rms = fitted_n ? std::sqrt(ss / fitted_n) : kNaN;
  check.tolerance = std::max(2 * check.fitted_rms, 0.05);
  for (ModelCheckRow& r : check.rows) {
    r.reproduced = std::isfinite(r.fitted_error) && std::fabs(r.fitted_error) <= check.tolerance;
    check.not_reproduced += !r.reproduced;
  }
  check.held_out = static_cast<int>(held.size());
  if (!held.empty()) {
    check.held_out_max = *std::max_element(held.begin(), held.end());
    check.held_out_median = Quantile(held, 0.5);
    check.goal_met = check.held_out_median <= check.goal;
  }
  return check;
}

std::string ModelCheck::Sentence() const {
  if (!status.ok()) return "Model check: not possible: " + status.message();
  std::string s = fmt::format(
      "Model check: at the {} measured configurations the fitted step-time model gives the "
      "measured step times within {} (RMS; {} at worst){}",
      rows.size(), ProsePercent(fitted_rms), ProsePercent(fitted_max),
      not_reproduced == 0 ? ""
                          : fmt::format(", {} configuration(s) beyond the tolerance {}",
                                        not_reproduced, ProsePercent(tolerance)));
  if (held_out == 0) {
    s += "; held out: no configuration could be predicted from the others (each model needs "
         "another measured configuration: sweep more batch sizes or ranks), so the projection "
         "is unchecked.";
  } else {
    s += fmt::format(
        "; held out (each configuration predicted from a model fitted without it): median error "
        "{} over {} configurations, {} at worst (goal <= {}: {}).",
        ProsePercent(held_out_median), held_out, ProsePercent(held_out_max), ProsePercent(goal),
        goal_met ? "met" : "NOT met, read the projection as rough");
  }
  if (!comm_undetermined.empty()) {
    s += " This machine's allreduce alpha-beta fit is not determined (" + comm_undetermined +
         "), so the multi-rank rows' comm term reproduces the measured designs only.";
  }
  return s;
}

}  // namespace batchlab::analysis
