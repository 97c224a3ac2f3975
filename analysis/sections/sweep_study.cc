// RunStudy (see sweep_study.h).
#include "analysis/sections/sweep_study.h"

#include <utility>

namespace batchlab::analysis {

StatusOr<Study> RunStudy(const SweepData& sweep, const StudyOptions& options) {
  Study s;
  s.sweep = sweep.name;
  s.version = sweep.version;
  s.runs = static_cast<int>(sweep.runs.size());
  for (const RunData& r : sweep.runs) ++s.states[r.state.empty() ? "unknown" : r.state];
  s.options = options;
  if (!options.target.empty()) BATCHLAB_RETURN_IF_ERROR(ParseTarget(options.target).status());
  BATCHLAB_ASSIGN_OR_RETURN(const Preference prefer, ParsePreference(options.prefer));
  StatusOr<TargetSection> target = AnalyzeTarget(sweep, options);
  if (!target.ok() && target.status().code() == StatusCode::kInvalidArgument &&
      !options.target.empty()) {
    return target.status();  // the user's --target names no metric of the sweep
  }
  s.gns = AnalyzeGns(sweep, options);
  s.scaling = AnalyzeScaling(sweep, options);
  s.curves = CollectCurves(sweep, /*max_points=*/300);
  {
    CbsSectionOptions cbs;
    cbs.cbs.resamples = options.resamples;
    cbs.cbs.confidence = options.confidence;
    cbs.cbs.seed = options.seed;
    cbs.beta = options.beta;
    s.cbs = AnalyzeCbs(sweep, cbs);
  }
  if (target.ok()) {
    s.target = std::move(*target);
    s.crit = AnalyzeCrit(s.target, s.gns, options);
    s.crit.tokens_per_sequence = TokensPerSequence(sweep);
    s.projection = AnalyzeProjection(sweep, s.target, s.scaling, options);
    s.pareto = AnalyzePareto(s.target);  // points into s.target, which no longer moves here
    MarkIncomparableTimings(s.scaling.timings, s.target, &s.pareto);
    s.recommendation = AnalyzeRecommendation(s.target, s.crit, s.projection, prefer);
    MarkIncomparableTimings(s.scaling.timings, &s.recommendation);
    s.lr = AnalyzeLr(sweep, s.target, options);
    SetRecommendationLrs(s.lr, &s.recommendation);
    s.sync = AnalyzeSync(sweep, s.target.hits, s.target.target);
  } else {
    s.target_status = target.status();
    s.lr.status = target.status();
    s.crit.status = target.status();
    s.crit.b_simple = s.gns.median;
    s.projection.status = target.status();
    StatusOr<ClusterProfile> profile = FindClusterProfile(options.profile);
    if (profile.ok()) s.projection.profile = *profile;
  }
  return s;
}

}  // namespace batchlab::analysis
