// Scaling efficiency: throughput against world size, strong and weak scaling, the communication
// fraction from the runner's timing breakdown, and the ring-allreduce α–β cost model.
//
// Strong scaling holds the global batch fixed and adds ranks; weak scaling holds the local batch
// (per rank) fixed. In both, with throughput X(K) in samples/s at K ranks and K0 the smallest
// world size of a group: speedup = X(K) / X(K0), efficiency = speedup / (K / K0).
// Ring allreduce of n bytes on K ranks (Patarasuk & Yuan 2009, "Bandwidth optimal all-reduce
// algorithms for clusters of workstations", J. Parallel Distrib. Comput. 69(2); Thakur,
// Rabenseifner & Gropp 2005, IJHPCA 19(1)):  t = 2(K−1)·α + 2(K−1)/K · n/β, and the NCCL "bus
// bandwidth" busbw = (n / t) · 2(K−1)/K (nccl-tests, doc/PERFORMANCE.md).
//
//   std::vector<RunTiming> t = RunTimings(sweep.runs, /*skip_steps=*/5);
//   for (const ScalingRow& r : StrongScaling(t)) fmt::print("{} {}\n", r.world_size, r.efficiency);
//   BATCHLAB_ASSIGN_OR_RETURN(AlphaBetaFit ab, FitRingAllreduce(AllreduceObservationsOf(t)));
#ifndef BATCHLAB_ANALYSIS_SCALING_H_
#define BATCHLAB_ANALYSIS_SCALING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/run_data.h"
#include "base/status.h"

namespace batchlab::analysis {

// The measured speed of one run.
struct RunTiming {
  std::string run_id;
  std::string label;
  // The configuration apart from world size, batch size, seed and LR settings: strong scaling
  // groups runs by (strong_key, batch_size), weak scaling by (weak_key, local_batch_size).
  std::string strong_key;
  std::string weak_key;
  int world_size = 1;
  int nodes = 1;
  int64_t batch_size = 0;
  int64_t local_batch_size = 0;
  int64_t parameters = 0;
  int64_t steps = 0;         // steps averaged (after the skipped warm-up steps)
  double step_seconds = 0;   // mean
  double comm_seconds = 0;   // mean
  double throughput = 0;     // batch_size / step_seconds, samples per second
  double comm_fraction = 0;  // comm_seconds / step_seconds
  double bus_bandwidth = 0;  // bytes/s; 0 when unknown (one rank, no model size, no comm)
};

// Timings of the runs that logged step_seconds, skipping each run's first `skip_steps` steps
// (start-up, allocator warm-up); a run with no step left after skipping is left out.
std::vector<RunTiming> RunTimings(const std::vector<RunData>& runs, int64_t skip_steps);

struct ScalingRow {
  std::string kind;   // "strong" or "weak"
  std::string group;  // "B=256" (strong) or "b_local=128" (weak)
  std::string config_key;
  int world_size = 1;
  int nodes = 1;
  int runs = 0;           // runs averaged at this world size
  double throughput = 0;  // samples/s, mean over the runs
  double speedup = 1;     // X(K) / X(K0)
  double efficiency = 1;  // speedup / (K / K0)
  double comm_fraction = 0;
};

// One row per (group, world size) for groups with at least 2 world sizes, ordered by group then K.
std::vector<ScalingRow> StrongScaling(const std::vector<RunTiming>& timings);
std::vector<ScalingRow> WeakScaling(const std::vector<RunTiming>& timings);

// Bytes allreduced per step for a model of `parameters` scalars (fp32 gradients: 4 bytes each).
double GradientBytes(int64_t parameters);

// t = 2(K−1)α + 2(K−1)/K · bytes/β; 0 for K <= 1.
double RingAllreduceSeconds(int world_size, double bytes, double alpha_seconds,
                            double bandwidth_bytes_per_second);

struct AllreduceObservation {
  int world_size = 2;
  double bytes = 0;
  double seconds = 0;
};

struct AlphaBetaFit {
  double alpha_seconds = 0;               // per-message latency
  double bandwidth_bytes_per_second = 0;  // +inf when the bandwidth term fitted to <= 0
  double rms_residual_seconds = 0;
  int observations = 0;
};

// Least squares of the ring model (no intercept) over observations with K >= 2, constrained to
// α >= 0 and 1/β >= 0. FailedPrecondition when the observations cannot separate α from β
// (fewer than 2 distinct (K, bytes) designs).
StatusOr<AlphaBetaFit> FitRingAllreduce(const std::vector<AllreduceObservation>& obs);

// Observations from timings with K >= 2, a known model size and a logged comm time.
std::vector<AllreduceObservation> AllreduceObservationsOf(const std::vector<RunTiming>& timings);

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_SCALING_H_
