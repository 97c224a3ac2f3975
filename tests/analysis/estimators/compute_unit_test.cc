// Compute to target in FLOPs where every run that reached the target stored flops_per_step, in
// rank-seconds otherwise, never mixed: hand-made runs whose frontier and recommendation differ
// between the two units, so the unit used is visible in the answer.
//
//   run  B    K  steps  s/step  seconds  rank-s  flops_per_step  FLOPs
//   a    64   1  100    0.1     10       10      6.4e7           6.4e9
//   b    256  2  40     0.1     4        8       2.56e8          1.024e10
//   c    256  1  40     0.3     12       12      2.56e8          1.024e10
// In rank-seconds b beats a and c on both axes: the frontier is {b} and the least compute is b.
// In FLOPs a is the cheapest (6.4e9) and b the fastest: the frontier is {b, a}, least compute a.
#include "analysis/estimators/compute_unit.h"

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "analysis/sections/recommendation.h"
#include "analysis/sections/study.h"

namespace batchlab::analysis {
namespace {

RunData Run(const std::string& id, int64_t b, int k, int64_t steps, double step_seconds,
            double flops_per_step) {
  RunData r;
  r.id = id;
  r.params = {{"batch_size", std::to_string(b)}, {"nodes", std::to_string(k)}};
  r.batch_size = b;
  r.world_size = k;
  r.nodes = k;
  r.local_batch_size = b / k;
  r.flops_per_step = flops_per_step;
  r.state = "completed";
  Series& sec = r.metrics["step_seconds"];
  for (int64_t s = 1; s <= steps + 10; ++s) {
    sec.steps.push_back(s);
    sec.values.push_back(step_seconds);
  }
  r.metrics["test_accuracy"] = Series{{steps / 2, steps, steps + 10}, {0.5, 0.85, 0.9}};
  return r;
}

SweepData Sweep(double fa, double fb, double fc) {
  SweepData s;
  s.name = "units";
  s.target = "test_accuracy>=0.8";
  s.runs = {Run("a", 64, 1, 100, 0.1, fa), Run("b", 256, 2, 40, 0.1, fb),
            Run("c", 256, 1, 40, 0.3, fc)};
  return s;
}

// Not copied: the Pareto section points into the target section.
struct Analysed {
  Analysed() = default;
  Analysed(const Analysed&) = delete;
  TargetSection target;
  ParetoSection pareto;
  Recommendation compute;  // prefer compute
};

std::unique_ptr<Analysed> Analyse(const SweepData& sweep) {
  auto out = std::make_unique<Analysed>();
  Analysed& a = *out;
  auto target = AnalyzeTarget(sweep, StudyOptions{});
  EXPECT_TRUE(target.ok()) << target.status().message();
  a.target = std::move(*target);
  a.pareto = AnalyzePareto(a.target);
  a.compute = RecommendMeasured(a.target, CritSection{}, Preference::kCompute);
  EXPECT_TRUE(a.compute.status.ok()) << a.compute.status.message();
  return out;
}

std::vector<std::string> FrontierIds(const ParetoSection& p) {
  std::vector<std::string> ids;
  for (size_t i : p.frontier) ids.push_back(p.points[i].id);
  return ids;
}

TEST(ComputeUnitTest, AllRunsWithFlopsUseFlopsEverywhere) {
  const std::unique_ptr<Analysed> a_owner = Analyse(Sweep(6.4e7, 2.56e8, 2.56e8));
  const Analysed& a = *a_owner;
  EXPECT_EQ(a.target.compute.unit, ComputeUnit::kFlops);
  EXPECT_EQ(a.target.compute.reached, 3);
  EXPECT_EQ(a.pareto.compute.unit, ComputeUnit::kFlops);
  EXPECT_EQ(FrontierIds(a.pareto), (std::vector<std::string>{"b", "a"}));
  for (const ParetoPoint& p : a.pareto.points) {
    const double want = p.id == "a" ? 6.4e9 : 1.024e10;
    EXPECT_DOUBLE_EQ(p.compute, want) << p.id;
  }
  // Least compute in FLOPs: a (B=64 on 1 rank), 6.4e9 against itself as the baseline.
  EXPECT_EQ(a.compute.compute_unit, ComputeUnit::kFlops);
  EXPECT_EQ(a.compute.choice.batch_size, 64);
  EXPECT_DOUBLE_EQ(a.compute.choice.compute, 6.4e9);
  EXPECT_NE(RecommendationSentence(a.compute).find("FLOPs"), std::string::npos)
      << RecommendationSentence(a.compute);
  // Every output names the unit.
  EXPECT_NE(ParetoTables(a.pareto)[0].title.find("(FLOPs)"), std::string::npos);
  EXPECT_EQ(ParetoJson(a.pareto)["compute_unit"], "FLOPs");
  EXPECT_EQ(TargetJson(a.target)["compute_unit"], "FLOPs");
  EXPECT_NE(a.target.compute.Note().find("all 3 run(s)"), std::string::npos);
}

TEST(ComputeUnitTest, NoRunWithFlopsUsesRankSeconds) {
  const std::unique_ptr<Analysed> a_owner = Analyse(Sweep(0, 0, 0));
  const Analysed& a = *a_owner;
  EXPECT_EQ(a.target.compute.unit, ComputeUnit::kRankSeconds);
  EXPECT_EQ(a.target.compute.with_flops, 0);
  EXPECT_EQ(FrontierIds(a.pareto), (std::vector<std::string>{"b"}));
  // Least compute in rank-seconds: b (B=256 on 2 ranks), 2 x 4 s.
  EXPECT_EQ(a.compute.choice.batch_size, 256);
  EXPECT_EQ(a.compute.choice.world_size, 2);
  EXPECT_NEAR(a.compute.choice.compute, 8, 1e-9);
  EXPECT_NE(RecommendationSentence(a.compute).find("rank-seconds"), std::string::npos);
  EXPECT_EQ(RecommendationSentence(a.compute).find("FLOPs"), std::string::npos);
  EXPECT_NE(ParetoTables(a.pareto)[0].title.find("(rank-seconds)"), std::string::npos);
  EXPECT_EQ(ParetoJson(a.pareto)["compute_unit"], "rank-seconds");
}

TEST(ComputeUnitTest, MixedFallsBackToRankSecondsAndSaysSo) {
  // c did not report FLOPs: the whole study is in rank-seconds, b alone on the frontier.
  const std::unique_ptr<Analysed> a_owner = Analyse(Sweep(6.4e7, 2.56e8, 0));
  const Analysed& a = *a_owner;
  EXPECT_EQ(a.target.compute.unit, ComputeUnit::kRankSeconds);
  EXPECT_EQ(a.target.compute.reached, 3);
  EXPECT_EQ(a.target.compute.with_flops, 2);
  EXPECT_EQ(FrontierIds(a.pareto), (std::vector<std::string>{"b"}));
  EXPECT_NEAR(a.pareto.points[0].compute, 10, 1e-9);  // a in rank-seconds, not 6.4e9 FLOPs
  EXPECT_EQ(a.compute.choice.world_size, 2);
  const std::string note = a.target.compute.Note();
  EXPECT_NE(note.find("only 2 of the 3"), std::string::npos) << note;
  EXPECT_NE(note.find("never mixed"), std::string::npos) << note;
  bool said = false;
  const std::vector<Table> tables = ParetoTables(a.pareto);
  for (const std::string& n : tables[0].notes) said |= n.find("only 2 of") != n.npos;
  EXPECT_TRUE(said);
  EXPECT_EQ(TargetJson(a.target)["compute_note"], note);
}

TEST(ComputeUnitTest, ProjectedCandidatesUseTheSameUnit) {
  const std::unique_ptr<Analysed> a_owner = Analyse(Sweep(6.4e7, 2.56e8, 2.56e8));
  const Analysed& a = *a_owner;
  ProjectionSection p;
  p.profile.name = "ib-100g";
  for (int k : {1, 2, 4}) {
    ProjectedPoint q;
    q.world_size = k;
    q.batch_size = 256;
    q.steps = 40;
    q.time_to_target = 40 * (0.2 / k + 0.01);
    q.compute = k * q.time_to_target;
    p.points.push_back(q);
  }
  // In FLOPs every K costs steps x flops_per_step at B=256; the tie goes to the fastest (K=4).
  for (const Candidate& c : ProjectedCandidates(p, a.target)) {
    EXPECT_DOUBLE_EQ(c.compute, 40 * 2.56e8) << c.label;
  }
  const Recommendation r = RecommendProjected(p, a.target, CritSection{}, Preference::kCompute);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r.compute_unit, ComputeUnit::kFlops);
  EXPECT_EQ(r.choice.world_size, 4);
  // In rank-seconds the same points cost K x time: K=1 is the cheapest.
  const std::unique_ptr<Analysed> s_owner = Analyse(Sweep(0, 0, 0));
  const Analysed& s = *s_owner;
  const Recommendation q = RecommendProjected(p, s.target, CritSection{}, Preference::kCompute);
  EXPECT_EQ(q.choice.world_size, 1);
  EXPECT_NEAR(q.choice.compute, 40 * 0.21, 1e-9);
}

}  // namespace
}  // namespace batchlab::analysis
