// Which batch size and rank count to use: the answer a scaling study exists for.
//
// Candidates are configurations (batch size, rank count and every other swept value, seeds
// averaged) whose every seed reached the target, with their time and compute to it: measured
// runs (TargetSection), or the projected points of a cluster profile (ProjectionSection). One is
// chosen for a stated preference:
//   time      least time to target (ties: less compute)
//   compute   least compute to target (ties: less time), in the study's one unit: FLOPs when
//             every run that reached the target stored flops_per_step, else rank-seconds
//             (compute_unit.h); projected points use the same unit as the measured ones
//   balanced  least time × compute, i.e. the largest sum of relative savings in both, a point of
//             the time-compute Pareto frontier (ties: less time)
// and compared with the baseline: the smallest batch size that reached the target, on the fewest
// ranks (then the fastest). With a B_crit fit (McCandlish et al. 2018, S = S_min(1 + B_crit/B)),
// doubling B saves the fraction B_crit / (2(B + B_crit)) of the steps: at most 1/4 from B_crit on.
//
//   BATCHLAB_ASSIGN_OR_RETURN(Preference p, ParsePreference("balanced"));
//   Recommendation r = RecommendMeasured(target, crit, p);
//   if (r.status.ok()) fmt::print("{}\n", RecommendationSentence(r));
//   // B=512 on 2 ranks: 3.1x faster to test_accuracy>=0.85 than B=32 on 1 rank, for 1.4x the
//   // compute; ...
#ifndef BATCHLAB_ANALYSIS_SECTIONS_RECOMMENDATION_H_
#define BATCHLAB_ANALYSIS_SECTIONS_RECOMMENDATION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/estimators/critical_batch_fit.h"
#include "analysis/estimators/scaling.h"
#include "analysis/sections/study.h"
#include "analysis/data/table.h"
#include "base/status.h"

namespace batchlab::analysis {

enum class Preference { kTime, kCompute, kBalanced };

// "time", "compute" or "balanced"; InvalidArgument naming --prefer otherwise.
StatusOr<Preference> ParsePreference(const std::string& name);
const char* PreferenceName(Preference p);

// One configuration with its cost to the target (means over its seeds).
struct Candidate {
  std::string label;   // "B=512 K=2 rule=linear opt=momentum"
  std::string run_id;  // its fastest seed's run (empty for a projected point)
  std::string detail;  // its other swept values ("comm.sync=backup"; empty for a projected point)
  int64_t batch_size = 0;
  int world_size = 1;
  int seeds = 1;
  double steps = 0;
  double seconds = 0;  // time to target
  double compute = 0;  // compute to target in the section's unit (FLOPs or rank-seconds)
  // A projected point that was also measured here and differs from the measurement: what was
  // measured ("measured here: 6.2 s and 230 steps"); empty otherwise.
  std::string measured_note;
};

// The candidates of a measured sweep: one per configuration all of whose seeds reached the
// target, in (batch size, rank count, label) order; compute in target.compute's unit.
std::vector<Candidate> MeasuredCandidates(const TargetSection& target);
// The projected points as candidates (label "B=.. K=.."), compute in target.compute's unit: the
// projection's rank-seconds, or in FLOPs steps × the flops_per_step measured at that batch size
// (FLOPs do not depend on the rank count).
std::vector<Candidate> ProjectedCandidates(const ProjectionSection& projection,
                                           const TargetSection& target);

// Index into `candidates` of the preferred one; nullopt when empty.
std::optional<size_t> Choose(const std::vector<Candidate>& candidates, Preference prefer);
// Index of the baseline (smallest batch size, fewest ranks, fastest); nullopt when empty.
std::optional<size_t> Baseline(const std::vector<Candidate>& candidates);

// The fraction of the steps that doubling the batch from `batch_size` saves under the fitted
// model: 1 − S(2B)/S(B) = B_crit / (2(B + B_crit)).
double DoublingSaving(double batch_size, double b_crit);

struct Recommendation {
  Status status;  // FailedPrecondition when no configuration reached the target
  Preference prefer = Preference::kBalanced;
  bool projected = false;
  std::string basis;    // "measured" or "projected: ib-100g"
  std::string profile;  // the cluster profile of a projection
  std::string target;   // "test_accuracy>=0.85"
  int candidates = 0;
  ComputeUnit compute_unit = ComputeUnit::kRankSeconds;  // of choice.compute, baseline.compute
  Candidate choice;
  Candidate baseline;
  double speedup = 0;        // baseline.seconds / choice.seconds
  double compute_ratio = 0;  // choice.compute / baseline.compute
  std::optional<double> b_crit;
  std::optional<double> doubling_saving;  // DoublingSaving(choice.batch_size, B_crit)
  // A projection's model check (ModelCheck::Sentence), printed beside it.
  std::string check;
  // Measured: why the choice's and the baseline's timings are not comparable (TimingsDiffer,
  // set by MarkIncomparableTimings); printed beside the speed-up it puts in doubt.
  std::string incomparable;
};

Recommendation RecommendMeasured(const TargetSection& target, const CritSection& crit,
                                 Preference prefer);
Recommendation RecommendProjected(const ProjectionSection& projection, const TargetSection& target,
                                  const CritSection& crit, Preference prefer);

// "B=512 on 2 ranks (lr.base=0.1): 3.1x faster to test_accuracy>=0.85 than B=32 on 1 rank
// (lr.base=0.03), for 1.4x the compute (balanced: ...)." (the parentheses: Candidate::detail)
// Projections start with "PROJECTION (...)"; a failed one says why.
std::string RecommendationSentence(const Recommendation& r);
// "Beyond B≈400 (B_crit) doubling the batch saves at most 25% of the steps; at B=512 it saves
// 22%." Empty without a B_crit fit.
std::string CritSentence(const Recommendation& r);

// The recommendation of every preference, measured and projected, and the chosen preference.
struct RecommendationSection {
  Preference prefer = Preference::kBalanced;
  std::vector<Recommendation> measured;   // time, compute, balanced
  std::vector<Recommendation> projected;  // the same on the projection's profile

  // The LR that goes with the chosen batch, from the measured LR law (lr_law_section.h,
  // LrRecommendation); empty when the study measured none.
  std::string lr;
  // The same for the projected choice's batch ("Projection: LR for B=..."; SetRecommendationLrs).
  std::string projected_lr;

  const Recommendation& ChosenMeasured() const { return measured[static_cast<int>(prefer)]; }
  const Recommendation& ChosenProjected() const { return projected[static_cast<int>(prefer)]; }
};
RecommendationSection AnalyzeRecommendation(const TargetSection& target, const CritSection& crit,
                                            const ProjectionSection& projection, Preference prefer);

// The one comparability rule (TimingsDiffer, analysis/estimators/scaling.h) applied to every
// measured recommendation: its choice's run against its baseline's.
void MarkIncomparableTimings(const std::vector<RunTiming>& timings, RecommendationSection* s);

// The chosen preference's sentences: measured, its B_crit sentence, projected.
std::vector<std::string> RecommendationLines(const RecommendationSection& section);
// One row per preference and basis; the sentences as notes.
Table RecommendationTable(const RecommendationSection& section);
nlohmann::json RecommendationJson(const RecommendationSection& section);

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_SECTIONS_RECOMMENDATION_H_
