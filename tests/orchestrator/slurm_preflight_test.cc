// Pre-flight for --backend slurm (orchestrator/launch/slurm_preflight.h): the partition's capacity from
// sinfo's node lines, and the runs that could never fit it refused with the field to change.
#include "orchestrator/launch/slurm_preflight.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace batchlab::orchestrator
