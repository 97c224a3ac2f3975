// Steps, samples, seconds and compute to reach a target, per run and per batch size.
//
// Per run: the first logged step at which the target metric meets the target (with the samples,
// training seconds and compute spent up to it). Per batch size: the best configuration over the
// other swept values (learning rate, rule, optimizer, ...), as in Shallue, Lee, Antognini,
// Sohl-Dickstein, Frostig & Dahl (2018), "Measuring the Effects of Data Parallelism on Neural
// Network Training", arXiv:1811.03600 (JMLR 20, 2019). Runs that diverged or never reached
// the target are counted and reported, never silently dropped.
//
//   BATCHLAB_ASSIGN_OR_RETURN(Target target, ParseTarget("test_accuracy>=0.85"));
//   std::vector<TargetHit> hits = FindTargetHits(sweep.runs, target);
//   for (const BatchBest& b : BestPerBatchSize(hits))
//     if (b.best) fmt::print("B={} steps={}\n", b.batch_size, b.best_steps);
#ifndef BATCHLAB_ANALYSIS_ESTIMATORS_STEPS_TO_TARGET_H_
#define BATCHLAB_ANALYSIS_ESTIMATORS_STEPS_TO_TARGET_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/data/run_data.h"
#include "base/status.h"

namespace batchlab::analysis {

enum class CompareOp { kGreaterEqual, kGreater, kLessEqual, kLess };

struct Target {
  std::string metric = "test_accuracy";
  CompareOp op = CompareOp::kGreaterEqual;
  double value = 0;

  bool Met(double x) const;
  std::string ToString() const;  // "test_accuracy>=0.85"
};

// Parses "METRIC OP VALUE" with OP one of >= > <= < (spaces optional).
StatusOr<Target> ParseTarget(const std::string& text);

enum class HitStatus {
  kReached,       // the target was met at `step`
  kNeverReached,  // the run finished (completed / budget exhausted) without meeting it
  kDiverged,      // the run diverged (state or a non-finite loss) before meeting it
  kFailed,        // the run failed, timed out or was cancelled before meeting it
  kUnfinished,    // pending or still running
  kNoMetric,      // the run never logged the target metric
  kPruned,        // stopped early by exact pruning: it could no longer change the best per batch
  kStalled,       // stopped by the opt-in stall rule: neither reached nor missed the target
};
const char* HitStatusName(HitStatus s);  // "reached", "never_reached", ...

struct TargetHit {
  std::string run_id;
  std::string label;       // RunLabel()
  std::string config_key;  // ConfigKey() without batch size and seed: what "best over" ranges over
  std::string detail;      // SweptDetail(): the swept values but batch size, ranks and seed
  int64_t batch_size = 0;
  int world_size = 1;
  int nodes = 1;
  int64_t seed = 0;
  std::string lr_rule, optimizer;
  HitStatus status = HitStatus::kNoMetric;
  int64_t step = 0;    // the first step meeting the target
  // Steps since the previous logged value of the target metric (the evaluation cadence; the
  // first evaluation: its step): the target was crossed in (step − resolution, step].
  int64_t resolution = 0;
  double samples = 0;  // samples processed up to it (the `samples` metric, else step × B)
  double seconds = 0;  // training seconds up to it (Σ step_seconds, else the `seconds` metric)
  // Rank-seconds: Σ over steps of seconds × the rank count that trained the step (world_size,
  // or per attempt under slurm.elastic: RunData::rank_segments).
  double compute = 0;
  // Training FLOPs to it: step × the run's stored flops_per_step; 0 when the run did not report
  // it (compute is then known only in rank-seconds).
  double flops = 0;
  double flops_per_step = 0;  // the run's stored fact (0: not reported), whatever its status
  // A run that did not reach the target and ran at several rank counts (slurm.elastic): the
  // rank-seconds of all its steps, each at the K that trained it (0 otherwise: SpentIn then
  // takes seconds x world_size).
  double spent_rank_seconds = 0;
};

// The one definition of the time-to-target figure of the analysis (tables, report,
// recommendation), named `train_seconds` wherever it is shown; the results database's
// `target_seconds` is a different figure (wall clock) and is named so.
inline constexpr const char* kTrainSecondsDefinition =
    "train_seconds = training time to the first evaluation that met the target: the sum of the "
    "steps' step_seconds, evaluations and start-up excluded (the `seconds` metric where a program "
    "logs no step_seconds); `results show` also gives target_seconds, the wall-clock time from "
    "the run's start to that evaluation, evaluations and start-up included";

// The hit of one run. `seconds` sums step_seconds over steps <= step when the run logged it
// (training time without evaluation); otherwise it is the `seconds` metric at that step.
TargetHit FindTargetHit(const RunData& run, const Target& target);
std::vector<TargetHit> FindTargetHits(const std::vector<RunData>& runs, const Target& target);

// The best configuration at one batch size. A configuration (config_key) counts as reaching
// the target only when all its seeds did; its steps are the mean over seeds.
struct BatchBest {
  int64_t batch_size = 0;
  int runs = 0;
  int reached = 0;
  int never_reached = 0;
  int diverged = 0;
  int failed = 0;      // failed, timed out or cancelled
  int unfinished = 0;  // pending or running
  int no_metric = 0;
  int pruned = 0;                  // stopped early: their configuration could no longer be the best
  int stalled = 0;                 // stopped by the stall rule (no better than chance)
  std::optional<TargetHit> best;   // the fastest (fewest steps) seed of the best configuration
  double best_steps = 0;           // mean steps over the best configuration's seeds
  double best_samples = 0;         // mean samples over them
  std::vector<double> seed_steps;  // steps of each seed of the best configuration
  std::vector<double> seed_resolution;  // each seed's TargetHit::resolution, in seed_steps order
};

// One entry per batch size present in `hits`, in increasing batch size.
std::vector<BatchBest> BestPerBatchSize(const std::vector<TargetHit>& hits);

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_ESTIMATORS_STEPS_TO_TARGET_H_
