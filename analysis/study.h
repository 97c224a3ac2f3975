// Runs the analyses of a loaded sweep: each section is computed on its own (so `batchlab analyze
// gns` computes only the noise scale) and carries its own Status, so one section that cannot be
// computed (e.g. too few batch sizes for the B_crit fit) never hides the others.
//
//   StudyOptions opt;
//   opt.target = "test_accuracy>=0.85";
//   BATCHLAB_ASSIGN_OR_RETURN(SweepData sweep, LoadSweep(db, "quickstart", {}));
//   GnsSection gns = AnalyzeGns(sweep, opt);
//   BATCHLAB_ASSIGN_OR_RETURN(TargetSection target, AnalyzeTarget(sweep, opt));
//   CritSection crit = AnalyzeCrit(target, gns, opt);
//   ParetoSection pareto = AnalyzePareto(target);
#ifndef BATCHLAB_ANALYSIS_STUDY_H_
#define BATCHLAB_ANALYSIS_STUDY_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "analysis/compute_unit.h"
#include "analysis/critical_batch.h"
#include "analysis/gradient_noise.h"
#include "analysis/lr_found.h"
#include "analysis/pareto.h"
#include "analysis/projection.h"
#include "analysis/run_data.h"
#include "analysis/scaling.h"
#include "analysis/step_model.h"
#include "analysis/steps_to_target.h"
#include "base/status.h"

namespace batchlab::analysis {

struct StudyOptions {
  std::string target;  // "" = the target configured in the sweep's runs
  // Gradient noise scale.
  double beta = 0.99;
  int64_t from_step = 0;
  int64_t to_step = std::numeric_limits<int64_t>::max();
  // A chosen point: when > 0, the window becomes the EMA's memory ending there,
  // [at_step − ceil(1/(1 − β)) + 1, at_step] (overrides from_step / to_step).
  int64_t at_step = 0;
  // Bootstrap (GNS and B_crit).
  int resamples = 1000;
  double confidence = 0.95;
  uint64_t seed = 1;
  // Scaling and projection.
  int64_t skip_steps = 5;
  std::string profile = "ib-100g";
  int max_world_size = 1024;
  double device_speedup = 1;
  int64_t parameters = 0;  // model size override; 0 = from the runs
  // Projected configurations never go below this local batch per rank unless measured;
  // 0 = the smallest local batch the sweep measured.
  int64_t min_local_batch = 0;
  // Recommendation: "time", "compute" or "balanced" (analysis/recommendation.h).
  std::string prefer = "balanced";
};

// The target to use: options.target, else the sweep's; InvalidArgument when neither is set.
StatusOr<Target> ResolveTarget(const SweepData& sweep, const StudyOptions& options);

// InvalidArgument naming --target when the sweep's runs logged metrics but none logged
// `target.metric` (a misspelt metric would otherwise count every run as never reaching it).
Status CheckTargetMetric(const SweepData& sweep, const Target& target);

struct GnsRun {
  std::string run_id;
  std::string label;
  std::string config_key;  // without seed
  int64_t batch_size = 0;
  int world_size = 1;
  Status status;         // why there is no estimate (no gns_* metrics, noise dominates, ...)
  GnsEstimate estimate;  // valid when status.ok()
  std::vector<GnsPoint> series;
  std::optional<GnsPoint> smoothed_end;  // the series at the last step of the window
};

// The step window of the estimate after applying at_step.
std::pair<int64_t, int64_t> GnsWindow(const StudyOptions& options);

struct GnsConfigSpread {
  std::string config_key;
  std::string label;
  SeedSpread spread;  // of the per-seed window estimates
};

struct GnsSection {
  std::vector<GnsRun> runs;            // every run that logged gns_* metrics
  std::vector<GnsConfigSpread> seeds;  // configurations with >= 2 seeds
  // Median and range of the per-run estimates: the sweep-level B_simple compared with B_crit.
  std::optional<double> median, min, max;
};
GnsSection AnalyzeGns(const SweepData& sweep, const StudyOptions& options);

struct TargetSection {
  Target target;
  std::vector<TargetHit> hits;    // one per run, in run order
  std::vector<BatchBest> best;    // per batch size
  ComputeBasis compute;           // the unit of compute to target: FLOPs or rank-seconds
  std::string lr_search_path;     // the spec's LR search path; empty without a search
  std::vector<LrFound> lr_found;  // what the search found per batch size
  // Why the target may be unreachable: outside the range its metric can take (an accuracy is a
  // fraction) or has taken in this sweep (naming the best observed value). Printed by the CLI as
  // warnings, shown in the report.
  std::vector<std::string> warnings;
};
StatusOr<TargetSection> AnalyzeTarget(const SweepData& sweep, const StudyOptions& options);

// The warnings of TargetSection::warnings for `target` over `sweep`'s runs.
std::vector<std::string> TargetRangeWarnings(const SweepData& sweep, const Target& target);

struct CritRegion {
  int64_t batch_size = 0;
  Region region = Region::kDiminishingReturns;
};

struct CritSection {
  Status status;  // of the fit
  CritFit fit;    // valid when status.ok()
  std::vector<CritRegion> regions;
  std::optional<double> b_simple;        // GnsSection::median
  std::optional<double> b_simple_ratio;  // B_simple / B_crit (the paper: within ~10×)
  // Language models: tokens per sequence when every run stored tokens_per_step > 0 (see
  // TokensPerSequence); B_crit, E_min and B_simple are then also given in tokens.
  std::optional<double> tokens_per_sequence;
};
CritSection AnalyzeCrit(const TargetSection& target, const GnsSection& gns,
                        const StudyOptions& options);

// Tokens per sequence (tokens_per_step / batch_size) when the sweep has runs, every run that
// logged anything (a pending run has no facts yet) stored tokens_per_step > 0 (a language model's
// start line) and all agree on it; nullopt otherwise (not a language model, a run without the fact,
// or different contexts: no mixed units). Batch sizes and samples are in sequences; × this gives
// tokens.
std::optional<double> TokensPerSequence(const SweepData& sweep);

struct ParetoSection {
  ComputeBasis compute;  // the unit of points[i].compute (the target section's)
  std::vector<ParetoPoint> points;
  std::vector<const TargetHit*> hits;  // hits[i] is the run of points[i]
  std::vector<size_t> frontier;        // indices into points, frontier order
};
// Keeps pointers into `target`, which must outlive the section.
ParetoSection AnalyzePareto(const TargetSection& target);

struct ScalingSection {
  std::vector<RunTiming> timings;
  std::vector<ScalingRow> strong;
  std::vector<ScalingRow> weak;
  Status alpha_beta_status;
  AlphaBetaFit alpha_beta;
};
ScalingSection AnalyzeScaling(const SweepData& sweep, const StudyOptions& options);

struct ProjectionSection {
  Status status;  // profile unknown, no timings, no model size, no target reached
  ClusterProfile profile;
  ComputeModel compute;  // pooled over every measured run (the fallback of a batch size whose
                         // best configuration's model has no timings)
  StepModel model;       // per model, and this machine's α–β fit
  ModelCheck check;      // the model against the measured runs: in-sample and held out
  int64_t parameters = 0;
  double min_local_batch = 0;  // the floor on projected local batches (StudyOptions)
  std::vector<ProjectedPoint> points;
};
ProjectionSection AnalyzeProjection(const SweepData& sweep, const TargetSection& target,
                                    const ScalingSection& scaling, const StudyOptions& options);

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_STUDY_H_
