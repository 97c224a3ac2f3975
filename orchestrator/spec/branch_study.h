// A branch study (docs/spec.md, "Branch study"; Merrill et al. 2025, arXiv 2505.23971): every run
// the spec's grid expands to is a trunk; from its checkpoints at the branch points, short branch
// runs train at k x B0 (B0: the trunk's batch) with the LR scaled by a rule, each for the same Δ
// samples. `batchlab analyze cbs` turns their losses into the critical batch size over training.
//
//   "branch": {"at_samples": [2048, 8192], "multipliers": [0.5, 1, 2, 4, 8],
//              "lr_rule": "sqrt", "delta_samples": 4096, "seeds": [1, 2, 3]}
//
// Branch points: exactly one of at_steps, at_samples (each rounded up to whole trunk steps),
// every_samples (every multiple before the trunk's end) or at_fractions (of the trunk's steps).
// A branch's config is its trunk's with: batch_size k x B0; lr.base the trunk's LR at the point
// (the trunk's schedule must be constant after its warmup, and the point after the warmup),
// lr.base_batch_size B0 and lr.rule the study's rule (no warmup); budget {"samples": Δ}; no
// target; the study's seed; and "branch" {trunk_run_id, at_step, at_samples, trunk_batch_size,
// multiplier}, so its run id names its trunk and point. The trunk gets the points in
// checkpoint.at_steps (not part of its id: adding a branch study leaves the trunk the same run).
// With "nodes": [n, ...] every branch also runs at each of those node counts (its config's
// nodes, world_size and local sizes; it starts from the trunk's checkpoint re-sharded, docs/
// protocol.md "Elastic resume"); without it a branch keeps the trunk's nodes (and its run id).
//
//   BATCHLAB_RETURN_IF_ERROR(ParseBranchStudy(doc["branch"], &spec.branch));   // spec.cc
//   BATCHLAB_RETURN_IF_ERROR(AddBranches(spec.branch, &plan));                // expansion.cc
#ifndef BATCHLAB_ORCHESTRATOR_SPEC_BRANCH_STUDY_H_
#define BATCHLAB_ORCHESTRATOR_SPEC_BRANCH_STUDY_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace batchlab::orchestrator {

struct Plan;

struct BranchStudy {
  bool enabled = false;
  enum class Points { kAtSteps, kAtSamples, kEverySamples, kAtFractions };
  Points points_kind = Points::kAtSteps;
  std::string points_field;    // "at_steps", ... (for messages)
  std::vector<double> points;  // as written (every_samples: one value)
  std::vector<double> multipliers;
  std::string lr_rule = "sqrt";  // sqrt | linear | none
  // The LR search per branch batch: each branch is run at the rule's LR times each factor, and
  // the analysis keeps, per k, the factor with the lowest loss after Δ. {1}: no search.
  std::vector<double> lr_factors = {1};
  long long delta_samples = 0;
  std::vector<long long> seeds;  // empty: the trunk's own seed
  std::vector<long long> nodes;  // the branches' node counts; empty: the trunk's
  int smooth_evals = 1;          // analysis: the mean of a branch's last evaluations
  double tolerance = 0.01;       // analysis: the loss gap still counted as "recovered"
};

// Parses the spec's "branch" object; every error names "branch.<field>" and the fix.
Status ParseBranchStudy(const nlohmann::ordered_json& o, BranchStudy* out);

// Adds the branches of every run of `plan` (its trunks) after them, and puts the branch points
// into each trunk's checkpoint.at_steps. Errors name the spec field: a point at or after the
// trunk's last step, a multiplier whose batch is not a whole number or not divisible by
// world_size x accumulation, a Δ that is not a whole number of steps of every branch batch, a
// trunk whose checkpoints do not restore it exactly (its sync mode) or whose LR is not constant
// there.
Status AddBranches(const BranchStudy& study, Plan* plan);

// The trunk steps of the branch points of a trunk with `total_steps` steps at batch `b0`.
StatusOr<std::vector<long long>> BranchSteps(const BranchStudy& study, long long total_steps,
                                             long long b0);

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_SPEC_BRANCH_STUDY_H_
