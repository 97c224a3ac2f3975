// The recommendation on synthetic sweeps whose right answer is known in closed form.
//
// Steps to target follow S(B) = S_min (1 + B_crit/B) and a step on K ranks takes
// t(B, K) = c B/K + o + m (m = o for K = 2, 0 for K = 1). On one rank the time to target
// S(B) (c B + o) is least at B* = sqrt(o B_crit / c); on two ranks at sqrt(2 (o + m) B_crit / c).
// With B_crit = 400, c = 1e-4 s, o = m = 0.01 s: B* = 200 on one rank (0.09 S_min s) and 400 on
// two (0.08 S_min s), so "time" picks B=400 K=2, while "compute" (K t) and "balanced"
// (t · K t) pick B=200 K=1.
#include "analysis/sections/recommendation.h"

#include <cmath>
#include <vector>
#include <string>

#include <fmt/core.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "analysis/sections/pareto_section.h"

namespace batchlab::analysis {
namespace {

constexpr double kSMin = 100, kBCrit = 400, kC = 1e-4, kO = 0.01;

double StepsAt(double b) { return kSMin * (1 + kBCrit / b); }
double StepSeconds(double b, int k) { return kC * b / k + kO + (k == 2 ? kO : 0); }

TargetHit Hit(int64_t b, int k, int64_t seed, double seconds_scale = 1) {
  TargetHit h;
  h.batch_size = b;
  h.world_size = k;
  h.nodes = k;
  h.seed = seed;
  h.run_id = fmt::format("b{}k{}s{}", b, k, seed);
  h.label = fmt::format("B={} K={}", b, k);
  h.config_key = fmt::format("nodes={}", k);
  h.status = HitStatus::kReached;
  h.step = static_cast<int64_t>(std::llround(StepsAt(static_cast<double>(b))));
  h.seconds =
      StepsAt(static_cast<double>(b)) * StepSeconds(static_cast<double>(b), k) * seconds_scale;
  h.compute = k * h.seconds;
  return h;
}

TargetSection Grid() {
  TargetSection t;
  t.target.metric = "test_accuracy";
  t.target.value = 0.8;
  for (int64_t b : {25, 50, 100, 200, 400, 800, 1600}) {
    for (int k : {1, 2}) t.hits.push_back(Hit(b, k, 1));
  }
  t.best = BestPerBatchSize(t.hits);
  return t;
}

CritSection Crit(const TargetSection& t) {
  CritOptions o;
  o.resamples = 200;
  CritSection c;
  auto fit = FitCriticalBatch(StepsPointsOf(t.best), o);
  EXPECT_TRUE(fit.ok()) << fit.status().message();
  if (fit.ok()) c.fit = *fit;
  return c;
}

TEST(RecommendationTest, PreferencesPickTheClosedFormOptima) {
  const TargetSection t = Grid();
  const CritSection crit = Crit(t);
  const Recommendation time = RecommendMeasured(t, crit, Preference::kTime);
  ASSERT_TRUE(time.status.ok()) << time.status.message();
  EXPECT_EQ(time.choice.batch_size, 400);
  EXPECT_EQ(time.choice.world_size, 2);
  for (Preference p : {Preference::kCompute, Preference::kBalanced}) {
    const Recommendation r = RecommendMeasured(t, crit, p);
    EXPECT_EQ(r.choice.batch_size, 200) << PreferenceName(p);
    EXPECT_EQ(r.choice.world_size, 1) << PreferenceName(p);
  }
  // Against the smallest batch on one rank: the closed-form ratios.
  EXPECT_EQ(time.baseline.batch_size, 25);
  EXPECT_EQ(time.baseline.world_size, 1);
  const double base = StepsAt(25) * StepSeconds(25, 1);
  EXPECT_NEAR(time.speedup, base / (StepsAt(400) * StepSeconds(400, 2)), 1e-9);
  EXPECT_NEAR(time.compute_ratio, 2 * StepsAt(400) * StepSeconds(400, 2) / base, 1e-9);
  EXPECT_EQ(time.candidates, 14);
}

// One comparability rule (TimingsDiffer) beside every timed comparison: the time choice B=400 on
// 2 ranks ran oversubscribed where its baseline B=25 on 1 rank did not, so its speed-up and its
// place on the frontier say so; the compute choice (no recorded conditions) and every other
// frontier point say nothing.
TEST(RecommendationTest, IncomparableTimingsAreSaidBesideTheSpeedupAndOnTheFrontier) {
  const TargetSection t = Grid();
  std::vector<RunTiming> timings(2);
  timings[0].run_id = "b25k1s1";
  timings[1].run_id = "b400k2s1";
  for (RunTiming& x : timings) {
    x.host = "node1";
    x.cpus = 2;
  }
  timings[0].load = 1;
  timings[1].load = 3;  // 3 ranks on 2 cores: oversubscribed
  RecommendationSection r = AnalyzeRecommendation(t, Crit(t), ProjectionSection{}, Preference::kTime);
  MarkIncomparableTimings(timings, &r);
  const Recommendation& time = r.measured[static_cast<int>(Preference::kTime)];
  EXPECT_EQ(time.choice.run_id, "b400k2s1");
  EXPECT_NE(time.incomparable.find("oversubscribed"), std::string::npos) << time.incomparable;
  EXPECT_NE(RecommendationSentence(time).find("Timings not comparable: one oversubscribed"),
            std::string::npos)
      << RecommendationSentence(time);
  EXPECT_EQ(RecommendationJson(r)["measured"]["timings_incomparable"], time.incomparable);
  const Recommendation& compute = r.measured[static_cast<int>(Preference::kCompute)];
  EXPECT_EQ(compute.incomparable, "");
  EXPECT_EQ(RecommendationSentence(compute).find("not comparable"), std::string::npos);

  ParetoSection p = AnalyzePareto(t);
  MarkIncomparableTimings(timings, t, &p);
  EXPECT_EQ(p.baseline_label, "B=25 K=1");
  int flagged = 0;
  for (size_t i = 0; i < p.points.size(); ++i) {
    flagged += !p.incomparable[i].empty();
    EXPECT_EQ(p.incomparable[i].empty(), p.hits[i]->run_id != "b400k2s1") << p.hits[i]->run_id;
  }
  EXPECT_EQ(flagged, 1);
  const std::vector<Table> tables = ParetoTables(p);
  const std::string notes = fmt::format("{}", fmt::join(tables.front().notes, "\n"));
  EXPECT_NE(notes.find("Timings not comparable with the baseline B=25 K=1"), std::string::npos)
      << notes;
  EXPECT_NE(notes.find("B=400 K=2: one oversubscribed"), std::string::npos) << notes;
}

TEST(RecommendationTest, BalancedIsTheLeastTimeTimesComputeAndOnTheFrontier) {
  const TargetSection t = Grid();
  const std::vector<Candidate> cands = MeasuredCandidates(t);
  const size_t i = *Choose(cands, Preference::kBalanced);
  for (const Candidate& c : cands) {
    EXPECT_LE(cands[i].seconds * cands[i].compute, c.seconds * c.compute + 1e-12) << c.label;
    // Nothing is both faster and cheaper.
    EXPECT_FALSE(c.seconds < cands[i].seconds && c.compute < cands[i].compute) << c.label;
  }
}

TEST(RecommendationTest, DoublingSavingMatchesTheFittedModel) {
  EXPECT_DOUBLE_EQ(DoublingSaving(kBCrit, kBCrit), 0.25);
  for (double b : {50.0, 400.0, 3000.0}) {
    EXPECT_NEAR(DoublingSaving(b, kBCrit), 1 - StepsAt(2 * b) / StepsAt(b), 1e-12);
  }
  const TargetSection t = Grid();
  const Recommendation r = RecommendMeasured(t, Crit(t), Preference::kTime);
  ASSERT_TRUE(r.b_crit.has_value());
  EXPECT_NEAR(*r.b_crit, kBCrit, 0.02 * kBCrit);  // the fit recovers it (steps rounded)
  EXPECT_NE(CritSentence(r).find("at most 25%"), std::string::npos) << CritSentence(r);
}

TEST(RecommendationTest, SeedsAreAveragedAndAConfigCountsOnlyIfEverySeedReached) {
  TargetSection t;
  t.target.value = 0.8;
  t.hits = {Hit(64, 1, 1), Hit(64, 1, 2, 3.0), Hit(256, 1, 1, 0.1), Hit(256, 1, 2, 0.1)};
  t.hits.back().status = HitStatus::kNeverReached;  // B=256's second seed: out
  const std::vector<Candidate> cands = MeasuredCandidates(t);
  ASSERT_EQ(cands.size(), 1u);
  EXPECT_EQ(cands[0].seeds, 2);
  EXPECT_NEAR(cands[0].seconds, 2 * StepsAt(64) * StepSeconds(64, 1), 1e-9);  // mean of 1x, 3x
  EXPECT_EQ(cands[0].run_id, "b64k1s1");                                      // the faster seed
}

// Configurations at the same batch size and rank count (a sweep over comm.sync, say) are named
// by their other swept values, the chosen one and the baseline alike.
TEST(RecommendationTest, TheSentenceNamesTheOtherSweptValues) {
  TargetSection t;
  t.target.value = 0.8;
  for (const char* mode : {"allreduce", "backup"}) {
    TargetHit h = Hit(384, 3, 1, std::string(mode) == "backup" ? 0.5 : 1.0);
    h.run_id = mode;
    h.config_key = std::string("comm.sync=") + mode;
    h.detail = std::string("comm.sync=") + mode;
    t.hits.push_back(h);
  }
  t.best = BestPerBatchSize(t.hits);
  const Recommendation time = RecommendMeasured(t, CritSection{}, Preference::kTime);
  ASSERT_TRUE(time.status.ok()) << time.status.message();
  EXPECT_EQ(time.choice.run_id, "backup");
  // The baseline is the fastest at the smallest batch and rank count: the same configuration.
  EXPECT_EQ(
      RecommendationSentence(time).rfind("B=384 on 3 ranks (comm.sync=backup): the smallest", 0),
      0u)
      << RecommendationSentence(time);
  const std::vector<Candidate> cands = MeasuredCandidates(t);
  ASSERT_EQ(cands.size(), 2u);
  EXPECT_EQ(cands[0].detail, "comm.sync=allreduce");
  // A choice and a baseline that differ name both.
  TargetSection two;
  two.target.value = 0.8;
  two.hits = {Hit(128, 1, 1), Hit(512, 2, 1)};
  two.hits[0].detail = "lr.base=0.03";
  two.hits[1].detail = "lr.base=0.1";
  two.best = BestPerBatchSize(two.hits);
  const std::string sentence =
      RecommendationSentence(RecommendMeasured(two, CritSection{}, Preference::kTime));
  EXPECT_EQ(sentence.rfind("B=512 on 2 ranks (lr.base=0.1): ", 0), 0u) << sentence;
  EXPECT_NE(sentence.find("than B=128 on 1 rank (lr.base=0.03), for"), std::string::npos)
      << sentence;
}

TEST(RecommendationTest, NothingReachedIsAFailedPreconditionNamingTheTarget) {
  TargetSection t;
  t.target.value = 0.99;
  t.hits = {Hit(64, 1, 1)};
  t.hits[0].status = HitStatus::kNeverReached;
  const Recommendation r = RecommendMeasured(t, CritSection{}, Preference::kBalanced);
  EXPECT_EQ(r.status.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(RecommendationSentence(r).find("0.99"), std::string::npos);
}

TEST(RecommendationTest, ProjectionIsLabelledAndUsesTheProjectedPoints) {
  TargetSection t = Grid();
  ProjectionSection p;
  p.profile.name = "ib-100g";
  // Projected: more ranks are always faster here, at growing compute.
  for (int k : {1, 2, 4, 8}) {
    ProjectedPoint q;
    q.world_size = k;
    q.batch_size = 1024;
    q.steps = StepsAt(1024);
    q.time_to_target = q.steps * (kC * 1024 / k + kO);
    q.compute = k * q.time_to_target;
    p.points.push_back(q);
  }
  const Recommendation r = RecommendProjected(p, t, CritSection{}, Preference::kTime);
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.choice.world_size, 8);
  EXPECT_TRUE(r.projected);
  EXPECT_EQ(RecommendationSentence(r).rfind("PROJECTION (ib-100g, a model", 0), 0u)
      << RecommendationSentence(r);
  const Recommendation c = RecommendProjected(p, t, CritSection{}, Preference::kCompute);
  EXPECT_EQ(c.choice.world_size, 1);
  p.status = FailedPreconditionError("no timings");
  EXPECT_FALSE(RecommendProjected(p, t, CritSection{}, Preference::kTime).status.ok());
}

TEST(RecommendationTest, ParsePreferenceNamesTheFlag) {
  EXPECT_EQ(*ParsePreference("compute"), Preference::kCompute);
  auto bad = ParsePreference("fast");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("--prefer"), std::string::npos);
}

}  // namespace
}  // namespace batchlab::analysis
