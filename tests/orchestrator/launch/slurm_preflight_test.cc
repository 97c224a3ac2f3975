// Pre-flight for --backend slurm (orchestrator/launch/slurm_preflight.h): the partition's capacity from
// sinfo's node lines, and the runs that could never fit it refused with the field to change.
// slurm.elastic (slurm_elastic.h): the spec's values, the plan-time check, the job's node request.
#include "orchestrator/launch/slurm_preflight.h"

#include <algorithm>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "orchestrator/launch/slurm_elastic.h"
#include "orchestrator/launch/slurm_launcher.h"
#include "orchestrator/spec/spec_sections.h"

namespace batchlab::orchestrator {
namespace {

constexpr const char* kSinfo =
    "blc1|blc*|4\n"
    "blc2|blc*|4\n"
    "blc3|blc*|8\n"
    "big1|big|64\n";

PlannedRun PlannedAt(int nodes, int per_node, int slots_per_rank = 1, bool swept = false) {
  PlannedRun r;
  r.id = "abcdef0123456789";
  r.config = {{"nodes", nodes}, {"ranks_per_node", per_node}};
  r.world_size = nodes * per_node;
  r.slots = r.world_size * slots_per_rank;
  if (swept) r.sources["nodes"] = "axes.nodes[1]";
  return r;
}

TEST(SlurmPreflightTest, ReadsTheDefaultOrNamedPartition) {
  auto cap = ParseSinfoNodes(kSinfo, "");
  ASSERT_TRUE(cap.ok()) << cap.status().message();
  EXPECT_EQ(cap->partition, "blc");
  EXPECT_EQ(cap->nodes, 3);
  EXPECT_EQ(cap->max_cpus_per_node, 8);
  cap = ParseSinfoNodes(kSinfo, "big");
  ASSERT_TRUE(cap.ok());
  EXPECT_EQ(cap->nodes, 1);
  EXPECT_EQ(cap->max_cpus_per_node, 64);
  // A node in two partitions is counted in each; a repeated line is one node.
  cap = ParseSinfoNodes("n1|a*|2\nn1|a*|2\nn1|b|2\n", "a");
  ASSERT_TRUE(cap.ok());
  EXPECT_EQ(cap->nodes, 1);
}

TEST(SlurmPreflightTest, AnUnknownPartitionNamesTheField) {
  auto cap = ParseSinfoNodes(kSinfo, "gpu");
  ASSERT_FALSE(cap.ok());
  EXPECT_EQ(cap.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(cap.status().message().find("slurm.partition: no partition 'gpu'"), std::string::npos);
  EXPECT_NE(cap.status().message().find("big, blc"), std::string::npos) << cap.status().message();
  EXPECT_FALSE(ParseSinfoNodes("n1|a|2\n", "").ok());  // no default partition
}

TEST(SlurmPreflightTest, RefusesRunsThatCanNeverFit) {
  PartitionCapacity cap{"blc", 3, 8};
  SlurmSettings slurm;
  Plan plan;
  plan.runs = {PlannedAt(1, 1), PlannedAt(3, 8), PlannedAt(2, 4, 2)};
  EXPECT_TRUE(CheckPartitionFits(plan, slurm, cap).ok());

  plan.runs = {PlannedAt(1, 1), PlannedAt(4, 1, 1, /*swept=*/true)};
  Status s = CheckPartitionFits(plan, slurm, cap);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("nodes: run abcdef0123456789 (axes.nodes[1] = 4) needs 4 nodes, but "
                             "partition 'blc' has 3"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("lower `nodes` to at most 3"), std::string::npos);

  plan.runs = {PlannedAt(1, 3, 3)};  // 9 CPUs on one node; the largest has 8
  s = CheckPartitionFits(plan, slurm, cap);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("ranks_per_node: run abcdef0123456789 (base.ranks_per_node = 3) "
                             "needs 9 CPUs on each node (3 per rank, resources.slots_per_rank)"),
            std::string::npos)
      << s.message();
  slurm.cpus_per_task = 1;  // slurm.cpus_per_task wins over the run's slots
  EXPECT_TRUE(CheckPartitionFits(plan, slurm, cap).ok());
  slurm.cpus_per_task = 4;
  s = CheckPartitionFits(plan, slurm, cap);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("slurm.cpus_per_task"), std::string::npos) << s.message();
}

TEST(SlurmElasticTest, TheSpecsValuesAreCheckedWithTheFieldAndTheFix) {
  SlurmSettings slurm;
  ASSERT_TRUE(spec_parsing::ParseSlurm(
                  nlohmann::ordered_json::parse(
                      R"({"elastic": {"min_nodes": 2, "pending_seconds": 30}})"),
                  &slurm)
                  .ok());
  ASSERT_TRUE(slurm.elastic.has_value());
  EXPECT_EQ(slurm.elastic->min_nodes, 2);
  EXPECT_EQ(slurm.elastic->pending_seconds, 30);
  const auto bad = [](const char* text) {
    SlurmSettings s;
    return spec_parsing::ParseSlurm(nlohmann::ordered_json::parse(text), &s).message();
  };
  EXPECT_NE(bad(R"({"elastic": {"min_nodes": 0}})")
                .find("slurm.elastic.min_nodes: 0 is below 1: an attempt runs on at least one "
                      "node; set it to 1 .. the run's `nodes`"),
            std::string::npos);
  EXPECT_NE(bad(R"({"elastic": {}})").find("slurm.elastic.min_nodes: is missing"),
            std::string::npos)
      << bad(R"({"elastic": {}})");
  EXPECT_NE(bad(R"({"elastic": {"min_nodes": 1, "pending_seconds": -1}})")
                .find("slurm.elastic.pending_seconds"),
            std::string::npos);
  EXPECT_NE(bad(R"({"elastic": {"min_nodes": 1, "pendng_seconds": 1}})").find("pending_seconds"),
            std::string::npos);
}

PlannedRun ElasticRun(int nodes, const std::string& sync, long long batch = 60) {
  PlannedRun r = PlannedAt(nodes, 1);
  r.config["batch_size"] = batch;
  r.config["accumulation"] = 1;
  r.config["comm"] = {{"sync", sync}};
  return r;
}

TEST(SlurmElasticTest, RunsThatCannotGoOnAtFewerNodesAreRefusedAtPlanTime) {
  SlurmSettings slurm;
  Plan plan;
  plan.runs = {ElasticRun(3, "allreduce"), ElasticRun(3, "async_ps")};
  EXPECT_TRUE(CheckElastic(slurm, plan).ok());  // no slurm.elastic: nothing to check
  slurm.elastic = SlurmElastic{2, 0};
  plan.runs = {ElasticRun(3, "allreduce"), ElasticRun(2, "lag"), ElasticRun(4, "local_sgd")};
  EXPECT_TRUE(CheckElastic(slurm, plan).ok());

  const auto refused = [&](std::vector<PlannedRun> runs) {
    plan.runs = std::move(runs);
    const Status s = CheckElastic(slurm, plan);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    return s.message();
  };
  EXPECT_NE(refused({ElasticRun(3, "allreduce"), ElasticRun(1, "allreduce")})
                .find("slurm.elastic.min_nodes: 2 is above run abcdef0123456789's nodes = 1"),
            std::string::npos);
  for (const char* sync : {"async_ps", "backup"}) {
    const std::string m = refused({ElasticRun(3, sync)});
    EXPECT_NE(
        m.find(fmt::format("slurm.elastic: run abcdef0123456789 has comm.sync \"{}\"", sync)),
        std::string::npos)
        << m;
    EXPECT_NE(m.find("remove slurm.elastic, or use comm.sync \"allreduce\""), std::string::npos);
  }
  // 90 trains at 3 ranks but not at 4 (5 nodes, min 2: 2, 3, 4 and 5 ranks).
  const std::string m = refused({ElasticRun(5, "allreduce", 90)});
  EXPECT_NE(m.find("batch size 90 is not divisible by world_size x accumulation = 4 x 1 at 4 "
                   "node(s)"),
            std::string::npos)
      << m;
  PlannedRun program = ElasticRun(3, "allreduce");
  program.program.builtin = false;
  EXPECT_NE(refused({program}).find("is a user program"), std::string::npos);
}

TEST(SlurmElasticTest, APendingJobIsLoweredToTheIdleNodesButNotBelowMinNodes) {
  EXPECT_EQ(ElasticNodeRange(SlurmSettings{}, 3), std::make_pair(3, 3));
  SlurmSettings slurm;
  slurm.elastic = SlurmElastic{2, 0};
  EXPECT_EQ(ElasticNodeRange(slurm, 3), std::make_pair(2, 3));
  EXPECT_EQ(ElasticNodeRange(slurm, 2), std::make_pair(2, 2));
  EXPECT_EQ(ElasticNodeCount({2, 4}, 3), 3);  // a host lost: what is idle
  EXPECT_EQ(ElasticNodeCount({2, 4}, 0), 2);  // nothing idle: the first 2 that free up
  // Enough idle: it pends for another reason (priority); lowering it would not help.
  EXPECT_EQ(ElasticNodeCount({2, 4}, 4), std::nullopt);
  EXPECT_EQ(ParseIdleNodes("2\n"), 2);
  EXPECT_EQ(ParseIdleNodes("2\n1\n"), 3);
  EXPECT_EQ(ParseIdleNodes(""), std::nullopt);
  EXPECT_EQ(ParseIdleNodes("sinfo: error\n"), std::nullopt);
  // The job asks sbatch for the run's own node count; only a pending one is lowered.
  SlurmLaunchSettings s;
  s.slurm = slurm;
  LaunchRequest r;
  r.run_id = "abc";
  r.attempt_dir = "/runs/s/abc/attempt-2";
  r.nodes = 3;
  r.world_size = 3;
  r.rank_command = {"batchlab-runner", "--config", "/runs/s/abc/attempt-2/config.json"};
  const auto a = SbatchArguments(s, r, "/runs/s/abc/attempt-2/job.sh", false);
  EXPECT_NE(std::find(a.begin(), a.end(), "--nodes=3"), a.end());
}

}  // namespace
}  // namespace batchlab::orchestrator
