// Projection of time per step and time to target past this machine: a MODEL, not a measurement.
//
// For K ranks on a named cluster profile (ring latency α, link bandwidth β) and global batch B:
//   t_step(K, B) = c · max(B/K, b_floor) + o + 2(K−1)·α + 2(K−1)/K · n/β
// where c (seconds per sample) and o (seconds per step) come from a weighted least-squares fit of
// the measured non-communication time per step, (step_seconds − comm_seconds) = c · b_local + o,
// over the runs of one model (step_model.h), b_floor is the smallest local batch measured (per-
// rank compute is never projected below what was measured: a device does not get faster per step
// below it), n is the gradient size in bytes, and the allreduce is assumed not to overlap with
// compute (conservative). Time to target = S(B) · t_step with S(B) the measured best steps to
// target at B (steps do not depend on K for synchronous data parallelism); compute = K · time.
// See docs/methods.md §6 for the profile sources and the assumptions.
//
//   BATCHLAB_ASSIGN_OR_RETURN(ComputeModel cm, FitComputeModel(RunTimings(sweep.runs, 5)));
//   BATCHLAB_ASSIGN_OR_RETURN(ClusterProfile ib, FindClusterProfile("ib-100g"));
//   std::vector<ProjectedPoint> pts = Project(cm, ib, parameters, {{256, 900}, {1024, 400}}, 1024);
#ifndef BATCHLAB_ANALYSIS_ESTIMATORS_PROJECTION_H_
#define BATCHLAB_ANALYSIS_ESTIMATORS_PROJECTION_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analysis/estimators/scaling.h"
#include "base/status.h"

namespace batchlab::analysis {

struct ClusterProfile {
  std::string name;         // "ib-100g"
  std::string description;  // "InfiniBand EDR/HDR100, 100 Gb/s per node"
  std::string source;       // where the figures come from
  double alpha_seconds = 0;
  double bandwidth_bytes_per_second = 0;
};

// The built-in profiles (documented in docs/methods.md §6).
const std::vector<ClusterProfile>& ClusterProfiles();
// NotFound naming the known profiles when `name` is none of them.
StatusOr<ClusterProfile> FindClusterProfile(const std::string& name);

// Non-communication time per step = seconds_per_sample · max(b_local, min_local_batch) +
// seconds_per_step: α_c + β_c·b with a floor at the smallest measured local batch.
struct ComputeModel {
  double seconds_per_sample = 0;  // β_c
  double seconds_per_step = 0;    // α_c
  double min_local_batch = 0;     // the floor: the smallest local batch measured (0: none)
  double max_local_batch = 0;     // the largest measured
  int runs = 0;
  int local_batches = 0;          // distinct local batch sizes measured
  double rms_relative_residual = 0;
  double speedup = 1;  // the projected device is this many times faster than the measured one

  double StepSeconds(double local_batch) const {
    return LineSeconds(std::max(local_batch, min_local_batch));
  }
  // The fitted line itself, without the floor.
  double LineSeconds(double local_batch) const {
    return (seconds_per_sample * local_batch + seconds_per_step) / speedup;
  }
};

// Least squares over the runs' mean (step_seconds − comm_seconds) against local batch size,
// weighted by 1/time² (relative errors: step times span orders of magnitude); with a single local
// batch size, seconds_per_step = 0 and seconds_per_sample is the mean ratio. FailedPrecondition
// when no run has timings; a negative fitted term is clamped to 0 with the other refitted.
StatusOr<ComputeModel> FitComputeModel(const std::vector<RunTiming>& timings);

struct StepsAtBatch {
  int64_t batch_size = 0;
  double steps = 0;  // steps to target
};

// What was measured at a projected configuration that was run on this machine: means over the
// seeds of its configuration with the fewest steps to target there.
struct MeasuredAtPoint {
  std::string label;          // that configuration ("B=32 K=1 lr.base=0.05")
  double steps = 0;           // steps to target
  double time_to_target = 0;  // training seconds to target
  double comm_seconds = 0;    // mean allreduce seconds per step (0: one rank or not logged)
};

struct ProjectedPoint {
  int world_size = 1;
  int64_t batch_size = 0;
  double compute_seconds = 0;  // c · B/K + o per step
  double comm_seconds = 0;     // ring allreduce per step
  double step_seconds = 0;
  double steps = 0;
  double time_to_target = 0;  // steps · step_seconds
  double compute = 0;         // world_size · time_to_target (rank-seconds)
  bool on_frontier = false;   // on the projected time-vs-compute Pareto frontier
  bool measured = false;      // this (K, B) was run on this machine
  std::optional<MeasuredAtPoint> here;  // what reached the target at it here (measured points)
  std::string difference;  // why the projection differs from `here` ("" when it agrees)
};

// Projected and measured time and steps agree when within this fraction of the measured ones.
inline constexpr double kProjectionAgreement = 0.005;

// Why the projected point `p` differs from what was measured at it, `m`, naming each cause that
// applies ("" when time and steps both agree within kProjectionAgreement): the steps (the
// projection uses the best steps at the batch size, `steps_from`, over every configuration and
// rank count; `m` is this configuration's), the compute line's residual at the local batch
// (`cm`, the floor included), the profile's allreduce in place of this machine's measured one,
// and the device speedup.
std::string ProjectionDifference(const ProjectedPoint& p, const MeasuredAtPoint& m,
                                 const ComputeModel& cm, const std::string& steps_from,
                                 const std::string& profile);

// K = 1, 2, 4, ..., max_world_size (powers of two) for every batch size with K <= B and a local
// batch B/K >= min_local_batch, unless (K, B) is in `measured` (a configuration that was run is
// always shown); the frontier is marked over all points. A batch size in `compute_at` is
// projected with that compute model (the model of the configuration that reached the target
// there), the others with `compute`.
std::vector<ProjectedPoint> Project(const ComputeModel& compute, const ClusterProfile& profile,
                                    int64_t parameters, const std::vector<StepsAtBatch>& steps,
                                    int max_world_size, double min_local_batch = 0,
                                    const std::set<std::pair<int, int64_t>>& measured = {},
                                    const std::map<int64_t, ComputeModel>& compute_at = {});

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_ESTIMATORS_PROJECTION_H_
