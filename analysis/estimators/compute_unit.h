// The unit of "compute to target" for one study: FLOPs when every run that reached the target
// stored its flops_per_step (a fact of the program's start line, docs/schema.md), rank-seconds
// (world_size × training seconds) otherwise. The two are never mixed within one table or figure:
// one run without FLOPs makes the whole study fall back to rank-seconds, and says so.
//
//   ComputeBasis basis = ChooseComputeBasis(target.hits);
//   for (const TargetHit& h : target.hits)
//     if (h.status == HitStatus::kReached)
//       fmt::print("{} {} {}\n", h.label, ComputeIn(h, basis.unit), ComputeUnitName(basis.unit));
//   fmt::print("{}\n", basis.Note());  // "compute in FLOPs: all 4 runs that reached ..."
#ifndef BATCHLAB_ANALYSIS_ESTIMATORS_COMPUTE_UNIT_H_
#define BATCHLAB_ANALYSIS_ESTIMATORS_COMPUTE_UNIT_H_

#include <string>
#include <vector>

#include "analysis/estimators/steps_to_target.h"

namespace batchlab::analysis {

enum class ComputeUnit { kRankSeconds, kFlops };

// "rank-seconds" or "FLOPs": the words every table, figure and sentence names the unit with.
const char* ComputeUnitName(ComputeUnit unit);

struct ComputeBasis {
  ComputeUnit unit = ComputeUnit::kRankSeconds;
  int reached = 0;     // runs that reached the target
  int with_flops = 0;  // of them, those that stored flops_per_step > 0

  // One sentence naming the unit and why it was chosen.
  std::string Note() const;
};

// FLOPs when at least one run reached the target and every such run has flops > 0.
ComputeBasis ChooseComputeBasis(const std::vector<TargetHit>& hits);

// The compute of a run that reached the target, in `unit`: h.flops or h.compute.
double ComputeIn(const TargetHit& h, ComputeUnit unit);

// What a run spent up to `step` after `seconds` of training, in `unit` (for runs drawn at what
// they spent although they never reached the target): step × flops_per_step, or world × seconds.
double SpentIn(const TargetHit& h, int64_t step, double seconds, ComputeUnit unit);

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_ESTIMATORS_COMPUTE_UNIT_H_
