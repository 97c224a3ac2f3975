// The unit of compute to target (see compute_unit.h, docs/methods.md §2).
#include "analysis/estimators/compute_unit.h"

#include <fmt/core.h>

namespace batchlab::analysis {

const char* ComputeUnitName(ComputeUnit unit) {
  return unit == ComputeUnit::kFlops ? "FLOPs" : "rank-seconds";
}

std::string ComputeBasis::Note() const {
  if (unit == ComputeUnit::kFlops) {
    return fmt::format(
        "compute in FLOPs: all {} run(s) that reached the target stored flops_per_step (compute = "
        "step x flops_per_step).",
        reached);
  }
  if (reached == 0) return "compute in rank-seconds (world_size x seconds): no run reached it.";
  if (with_flops == 0) {
    return "compute in rank-seconds (world_size x seconds): no run that reached the target "
           "stored flops_per_step.";
  }
  return fmt::format(
      "compute in rank-seconds (world_size x seconds): only {} of the {} runs that reached the "
      "target stored flops_per_step, so FLOPs are not used (the units are never mixed).",
      with_flops, reached);
}

ComputeBasis ChooseComputeBasis(const std::vector<TargetHit>& hits) {
  ComputeBasis b;
  for (const TargetHit& h : hits) {
    if (h.status != HitStatus::kReached) continue;
    ++b.reached;
    if (h.flops > 0) ++b.with_flops;
  }
  if (b.reached > 0 && b.with_flops == b.reached) b.unit = ComputeUnit::kFlops;
  return b;
}

double ComputeIn(const TargetHit& h, ComputeUnit unit) {
  return unit == ComputeUnit::kFlops ? h.flops : h.compute;
}

double SpentIn(const TargetHit& h, int64_t step, double seconds, ComputeUnit unit) {
  if (unit == ComputeUnit::kFlops) return static_cast<double>(step) * h.flops_per_step;
  // Several rank counts (slurm.elastic): each step at the K that trained it.
  if (h.spent_rank_seconds > 0) return h.spent_rank_seconds;
  return seconds * h.world_size;
}

}  // namespace batchlab::analysis
