// batchlab-rank's mapping from a launcher's variables to torch.distributed's, and a spawned
// job's exit code (orchestrator/launch/rank_environment.h).
#include "orchestrator/launch/rank_environment.h"

#include <gtest/gtest.h>

namespace batchlab::orchestrator {
namespace {

EnvLookup From(std::map<std::string, std::string> vars) {
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [shared](const char* name) -> const char* {
    auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  };
}

TEST(RankEnvironmentTest, OpenMpiRanks) {
  auto p = RankPlaceFromLauncher(From({{"OMPI_COMM_WORLD_RANK", "3"},
                                       {"OMPI_COMM_WORLD_SIZE", "4"},
                                       {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                       {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}}));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->rank, 3);
  EXPECT_EQ(p->world_size, 4);
  EXPECT_EQ(p->local_rank, 1);
  EXPECT_EQ(p->local_world_size, 2);
  auto env = TorchEnvironment(*p, From({{"MASTER_PORT", "40001"}}));
  EXPECT_EQ(env.at("RANK"), "3");
  EXPECT_EQ(env.at("WORLD_SIZE"), "4");
  EXPECT_EQ(env.at("LOCAL_RANK"), "1");
  EXPECT_EQ(env.at("LOCAL_WORLD_SIZE"), "2");
  EXPECT_EQ(env.at("MASTER_ADDR"), "127.0.0.1");  // defaulted
  EXPECT_EQ(env.count("MASTER_PORT"), 0u);        // the orchestrator's port is kept
}

TEST(RankEnvironmentTest, SlurmTasksIncludingItsRepeatedCountSyntax) {
  auto p = RankPlaceFromLauncher(From({{"SLURM_PROCID", "5"},
                                       {"SLURM_NTASKS", "6"},
                                       {"SLURM_LOCALID", "2"},
                                       {"SLURM_STEP_TASKS_PER_NODE", "3(x2)"}}));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->rank, 5);
  EXPECT_EQ(p->world_size, 6);
  EXPECT_EQ(p->local_rank, 2);
  EXPECT_EQ(p->local_world_size, 3);
}

TEST(RankEnvironmentTest, IncompleteOrInconsistentVariablesAreNotAPlace) {
  EXPECT_FALSE(RankPlaceFromLauncher(From({})).has_value());
  EXPECT_FALSE(RankPlaceFromLauncher(From({{"OMPI_COMM_WORLD_RANK", "4"},
                                           {"OMPI_COMM_WORLD_SIZE", "4"},
                                           {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                                           {"OMPI_COMM_WORLD_LOCAL_SIZE", "1"}}))
                   .has_value());  // rank >= size
  EXPECT_FALSE(RankPlaceFromLauncher(From({{"RANK", "x"}, {"WORLD_SIZE", "2"}})).has_value());
  // An existing torch environment (e.g. torchrun itself) is kept.
  auto p = RankPlaceFromLauncher(
      From({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"}}));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->rank, 1);
}

TEST(RankEnvironmentTest, JobExitCodeIsTheFirstFailureElseRankZeros) {
  EXPECT_EQ(JobExitCode({{0, 3}, {1, 3}}), 3);      // target reached everywhere
  EXPECT_EQ(JobExitCode({{0, 0}, {1, 143}}), 143);  // rank 1 killed: the job failed
  EXPECT_EQ(JobExitCode({{0, 1}, {1, 143}}), 1);
  EXPECT_EQ(JobExitCode({{0, 5}, {1, 0}}), 5);
  EXPECT_EQ(JobExitCode({{1, 0}}), 1);  // no rank 0: not a protocol answer
  EXPECT_EQ(JobExitCode({{0, 6}, {1, 6}}), 6);  // pruned on every rank: a final outcome
  EXPECT_EQ(JobExitCode({{0, 6}, {1, 7}}), 7);  // rank 1 preempted: the run is not finished
  EXPECT_EQ(JobExitCode({{0, 7}, {1, 0}}), 7);
}

}  // namespace
}  // namespace batchlab::orchestrator
