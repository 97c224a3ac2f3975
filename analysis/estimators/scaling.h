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
#ifndef BATCHLAB_ANALYSIS_ESTIMATORS_SCALING_H_
#define BATCHLAB_ANALYSIS_ESTIMATORS_SCALING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/estimators/bootstrap.h"
#include "analysis/data/run_data.h"
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
  // The step times after the skipped steps, in step order: the distribution every interval of
  // the scaling section is drawn from (a moving-block bootstrap over them).
  std::vector<double> step_samples;
  Interval step_interval;  // of the mean step time
  // The conditions the run had. load: the mean number of ranks (its own included) that ran on
  // its host while it ran, from the recorded start and end times of the sweep's runs (0: not
  // recorded); cpus and load_avg: what the program reported on its first step (0: not reported).
  std::string host;
  double load = 0;
  int cpus = 0;
  double load_avg = 0;
};

// Timings of the runs that logged step_seconds, skipping each run's first `skip_steps` steps
// (start-up, allocator warm-up); a run with no step left after skipping is left out. Each step-
// time interval is a `confidence` moving-block bootstrap (`resamples`, `seed`).
std::vector<RunTiming> RunTimings(const std::vector<RunData>& runs, int64_t skip_steps,
                                  int resamples = 400, double confidence = 0.95,
                                  uint64_t seed = 1);

// Whether two runs ran under the same conditions: the same host (when both are recorded) and,
// when their loads are recorded: with cores known, both or neither oversubscribed (load > cpus +
// 0.25), and oversubscribed ones with loads within 25%; cores unknown, the other runs' ranks on
// the host within half a rank. Empty when they did; else why not, for the report. cpus: what the
// program reported, else this machine's cores for a run that ran on this host.
std::string ConditionsDiffer(const RunTiming& a, const RunTiming& b);
// ConditionsDiffer, the one comparability rule of every timed comparison (the scaling
// efficiency, the recommendation's speed-up, the Pareto frontier), over the timings of runs
// `run_a` and `run_b` found by id; empty when they are comparable or either has no timing.
std::string TimingsDiffer(const std::vector<RunTiming>& timings, const std::string& run_a,
                          const std::string& run_b);

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
  double load = 0;        // mean load of the runs (RunTiming::load)
  int base_world_size = 0;  // K0: the baseline's world size (0: no comparable baseline)
  // The efficiency's interval: a bootstrap over every run's steps (and over the runs, when
  // several); unavailable when the baseline ran under other conditions (`incomparable`).
  Interval efficiency_interval;
  std::string incomparable;  // why no baseline of this group ran under the same conditions
  // The efficiency is above 100% beyond its interval (low > 1): not a possible result, so the
  // report shows it as noise (unequal conditions or timing noise), not as a number.
  bool above_possible = false;
};

// One row per (group, world size) for groups with at least 2 world sizes, ordered by group then K.
// The baseline of a row is the smallest world size of its group whose runs ran under the same
// conditions (ConditionsDiffer); the baseline's own row has efficiency 1 and no interval.
std::vector<ScalingRow> StrongScaling(const std::vector<RunTiming>& timings, int resamples = 400,
                                      double confidence = 0.95, uint64_t seed = 1);
std::vector<ScalingRow> WeakScaling(const std::vector<RunTiming>& timings, int resamples = 400,
                                    double confidence = 0.95, uint64_t seed = 1);

// Bytes allreduced per step for a model of `parameters` scalars (fp32 gradients: 4 bytes each).
double GradientBytes(int64_t parameters);

// t = 2(K−1)α + 2(K−1)/K · bytes/β; 0 for K <= 1.
double RingAllreduceSeconds(int world_size, double bytes, double alpha_seconds,
                            double bandwidth_bytes_per_second);

struct AllreduceObservation {
  int world_size = 2;
  double bytes = 0;
  double seconds = 0;
  int nodes = 1;  // hosts the ranks ran on (1: shared memory / loopback on one host)
};

struct AlphaBetaFit {
  double alpha_seconds = 0;               // per-message latency
  double bandwidth_bytes_per_second = 0;  // +inf when the bandwidth term fitted to <= 0
  double rms_residual_seconds = 0;
  int observations = 0;
  int designs = 0;         // distinct (K, bytes) pairs
  bool separated = true;   // false: one design, a bandwidth-only fit (α = 0)
  bool alpha_at_bound = false;  // the unconstrained fit gave α < 0: α was clamped to 0
  bool one_host = true;         // every observation's ranks shared one host
  // Why the fit does not describe a link (AlphaBetaUndetermined); empty when it is plausible.
  // An undetermined fit still reproduces the measured comm times at the measured designs, but
  // its α and β are not reported as the link's latency and bandwidth.
  std::string undetermined;
};

// The physical bounds of a measured α–β fit (docs/methods.md §6): ranks on one host exchange
// through shared memory or loopback, which move well over 1 GB/s on any machine (a memcpy moves
// several GB/s); ranks on several hosts are never linked slower than 100 Mb/s Fast Ethernet; no
// per-message latency exceeds 1 ms (kernel TCP round trips take ~25 µs). A fit outside them
// measured waiting (a slower rank, oversubscribed cores), not the link.
inline constexpr double kMinOneHostBandwidth = 1e9;          // bytes/s
inline constexpr double kMinNetworkBandwidth = 100e6 / 8;    // bytes/s
inline constexpr double kMaxPlausibleAlpha = 1e-3;           // seconds per ring step

// Why `fit` is not determined ("" when it is): a single observation, α clamped at 0 (the
// unconstrained fit was negative), no bandwidth term (times do not grow with the message), a
// bandwidth below kMinOneHostBandwidth (every run on one host) or kMinNetworkBandwidth, or a
// latency above kMaxPlausibleAlpha.
std::string AlphaBetaUndetermined(const AlphaBetaFit& fit);

// Least squares of the ring model (no intercept) over observations with K >= 2, constrained to
// α >= 0 and 1/β >= 0. FailedPrecondition when the observations cannot separate α from β
// (fewer than 2 distinct (K, bytes) designs).
StatusOr<AlphaBetaFit> FitRingAllreduce(const std::vector<AllreduceObservation>& obs);

// FitRingAllreduce, or with a single (K, bytes) design (e.g. 1 and 2 ranks of one model) a
// bandwidth-only fit t = 2(K−1)/K · n/β (α = 0, separated = false), which reproduces the
// measured design and scales with K and n as the ring does, but cannot tell latency from
// bandwidth. FailedPrecondition without any multi-rank observation.
StatusOr<AlphaBetaFit> FitRingAllreduceOrBandwidth(const std::vector<AllreduceObservation>& obs);

// Observations from timings with K >= 2, a known model size and a logged comm time.
std::vector<AllreduceObservation> AllreduceObservationsOf(const std::vector<RunTiming>& timings);

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_ESTIMATORS_SCALING_H_
