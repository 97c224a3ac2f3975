// The step-time model behind every projection, fitted from the sweep's own measured runs and
// checked against them (issue 26; docs/methods.md §6):
//
//   t_step(K, b) = compute(b) + comm(K, n)
//   compute(b)   = α_c + β_c · max(b, b_floor)        per model (the runs' configuration without
//                                                    batch size, ranks, seed and LR), projection.h
//   comm(K, n)   = 2(K−1)α + 2(K−1)/K · n/β           this machine's measured α–β fit (scaling.h)
//
// as Pollux (Qiao et al., "Pollux: Co-adaptive Cluster Scheduling for Goodput-Optimized Deep
// Learning", OSDI 2021, §3.2) models a step from the job's own measured steps. The check has two
// parts: at every measured configuration the fitted model must reproduce the measured step time
// (in-sample error), and leave-one-configuration-out cross-validation predicts each configuration
// from a model fitted without it (held-out error; the goal is a median of at most 15%).
//
//   std::vector<RunTiming> t = RunTimings(sweep.runs, 5);
//   BATCHLAB_ASSIGN_OR_RETURN(StepModel m, FitStepModel(t));
//   double s = m.Predict(t[0]);            // the model's step time for run 0's configuration
//   ModelCheck check = CheckStepModel(t);  // check.held_out_median: e.g. 0.07
#ifndef BATCHLAB_ANALYSIS_ESTIMATORS_STEP_MODEL_H_
#define BATCHLAB_ANALYSIS_ESTIMATORS_STEP_MODEL_H_

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/estimators/projection.h"
#include "analysis/estimators/scaling.h"
#include "base/status.h"

namespace batchlab::analysis {

struct StepModel {
  // By RunTiming::strong_key (the model), over every rank count.
  std::map<std::string, ComputeModel> compute;
  // By (model, K): ranks that share a host share its cores and memory bandwidth, so per-rank
  // compute measured at K ranks on one host is its own line.
  std::map<std::pair<std::string, int>, ComputeModel> compute_at_k;
  std::optional<AlphaBetaFit> comm;  // nullopt: no multi-rank run logged comm time

  // The modelled step time of a run like `t` on this machine (its model, world size, local batch
  // and size): the (model, K) compute line, else the model's; NaN when its model has no compute
  // fit, or it has K >= 2 and there is no comm fit. `floor` false: the compute line without its
  // floor (what the held-out check extrapolates with: it tests the linear law itself).
  double Predict(const RunTiming& t, bool floor = true) const;
  // The compute model of `key` (over every K); nullptr when the sweep measured no run of it.
  const ComputeModel* ComputeOf(const std::string& key) const;
  // The compute model for one rank per node: the model's 1-rank line when measured (a rank
  // alone on its host), else ComputeOf(key).
  const ComputeModel* ComputeForOneRankPerNode(const std::string& key) const;
};

// One compute model per model key and the α–β fit (FitRingAllreduceOrBandwidth) of `timings`.
// FailedPrecondition when no run has timings.
StatusOr<StepModel> FitStepModel(const std::vector<RunTiming>& timings);

// One measured configuration (model, K, B): its runs' mean step time against the model's.
struct ModelCheckRow {
  std::string label;  // "B=256 K=2" and the model's swept values
  std::string key;
  int world_size = 1;
  int64_t batch_size = 0;
  int64_t local_batch_size = 0;
  int runs = 0;
  double measured = 0;         // mean step_seconds of its runs
  double fitted = 0;           // the model fitted on every configuration
  double held_out = 0;         // the model fitted without this configuration (NaN: could not be)
  double fitted_error = 0;     // (fitted − measured) / measured
  double held_out_error = 0;   // (held_out − measured) / measured (NaN: not predicted)
  std::string held_out_note;   // why it could not be predicted held out
  bool reproduced = true;      // |fitted_error| <= the check's tolerance
};

struct ModelCheck {
  Status status;  // FailedPrecondition: no timings
  std::vector<ModelCheckRow> rows;
  double fitted_rms = 0;      // RMS of the in-sample relative errors
  double fitted_max = 0;      // largest |in-sample relative error|
  double tolerance = 0;       // what "reproduces" means: max(2 × fitted_rms, 5%)
  int held_out = 0;           // configurations predicted held out
  double held_out_median = std::numeric_limits<double>::quiet_NaN();  // median |error|
  double held_out_max = std::numeric_limits<double>::quiet_NaN();
  double goal = 0.15;         // issue 26: median held-out error at most 15%
  bool goal_met = false;
  int not_reproduced = 0;     // rows with reproduced == false
  // Why this machine's α–β fit is not determined (AlphaBetaFit::undetermined): the multi-rank
  // rows' allreduce term then holds at the measured designs only. Empty when determined.
  std::string comm_undetermined;

  // One sentence for the report: "Model check: ... held-out median error 7% over 6
  // configurations (goal <= 15%: met)".
  std::string Sentence() const;
};

// The in-sample and leave-one-configuration-out check of FitStepModel on `timings`.
ModelCheck CheckStepModel(const std::vector<RunTiming>& timings);

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_ESTIMATORS_STEP_MODEL_H_
