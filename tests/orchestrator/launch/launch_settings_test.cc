// Launch settings and runner discovery: mpirun argument vectors, environment precedence
// (spec launch.env > environment > defaults), ETA, and where batchlab-runner is found.
#include <algorithm>
#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>
#include <boost/filesystem.hpp>

#include "orchestrator/launch/local_launcher.h"
#include "orchestrator/execute/progress.h"
#include "orchestrator/launch/runner_locator.h"
#include "orchestrator/launch/slurm_launcher.h"
#include "tests/support/temp_dir.h"

namespace batchlab::orchestrator {
namespace {

namespace fs = boost::filesystem;

LaunchRequest Request(int world) {
  LaunchRequest r;
  r.run_id = "abc";
  r.attempt = 2;
  r.attempt_dir = "/runs/s/abc/attempt-2";
  r.config_path = "/runs/s/abc/attempt-2/config.json";
  r.nodes = world;
  r.world_size = world;
  r.slots = world;
  r.rank_command = {"/b/runner/batchlab-runner", "--config", r.config_path};
  return r;
}

TEST(LaunchSettingsTest, MpirunArgumentVector) {
  LocalLaunchSettings s;
  s.pool_slots = 2;
  auto args = MpirunArguments(s, Request(2), /*as_root=*/true, /*hardware_cores=*/2);
  // The run takes the whole pool and fits the cores: its ranks are pinned to them.
  EXPECT_EQ(args, (std::vector<std::string>{"-np", "2", "--bind-to", "core", "--allow-run-as-root",
                                            "/b/runner/batchlab-runner", "--config",
                                            "/runs/s/abc/attempt-2/config.json"}));
  // Not root, more ranks than slots: --oversubscribe, and the spec's mpirun_args before the runner.
  s.mpirun_args = {"--mca", "btl_tcp_if_include", "lo"};
  auto over = MpirunArguments(s, Request(4), false, 8);
  EXPECT_EQ(over,
            (std::vector<std::string>{"-np", "4", "--bind-to", "none", "--oversubscribe", "--mca",
                                      "btl_tcp_if_include", "lo", "/b/runner/batchlab-runner",
                                      "--config", "/runs/s/abc/attempt-2/config.json"}));
  // More ranks than cores even if the pool is larger.
  s.mpirun_args.clear();
  s.pool_slots = 16;
  auto cores = MpirunArguments(s, Request(4), false, 2);
  EXPECT_NE(std::find(cores.begin(), cores.end(), "--oversubscribe"), cores.end());
}

// Ranks are pinned only when the cores are the run's own: the whole pool, not oversubscribed.
TEST(LaunchSettingsTest, RanksAreBoundToCoresOnlyWhenTheSlotsAreTheirs) {
  auto binding = [](const std::vector<std::string>& args) {
    auto at = std::find(args.begin(), args.end(), "--bind-to");
    return at == args.end() || at + 1 == args.end() ? std::string("(absent)") : *(at + 1);
  };
  LocalLaunchSettings s;
  s.pool_slots = 4;
  EXPECT_EQ(binding(MpirunArguments(s, Request(2), false, 4)), "none");  // shares the pool
  EXPECT_EQ(binding(MpirunArguments(s, Request(4), false, 4)), "core");  // the whole pool
  EXPECT_EQ(binding(MpirunArguments(s, Request(4), false, 2)), "none");  // more ranks than cores
  LaunchRequest threaded = Request(2);
  threaded.slots = 4;
  threaded.cpus_per_rank = 2;
  auto t = MpirunArguments(s, threaded, false, 4);
  EXPECT_EQ(binding(t), "core");
  auto map = std::find(t.begin(), t.end(), "--map-by");
  ASSERT_NE(map, t.end());
  EXPECT_EQ(*(map + 1), "slot:PE=2");       // two cores per rank
  s.mpirun_args = {"--bind-to", "socket"};  // the spec's own binding is left alone
  auto own = MpirunArguments(s, Request(4), false, 4);
  EXPECT_EQ(std::count(own.begin(), own.end(), "--bind-to"), 1);
  EXPECT_EQ(binding(own), "socket");
}

TEST(LaunchSettingsTest, EnvironmentPrecedence) {
  // Defaults when nothing is set.
  auto d = LaunchEnvironmentOverrides({}, {});
  EXPECT_EQ(d.at("OMPI_MCA_btl"), "self,vader");
  EXPECT_EQ(d.at("OMPI_MCA_pml"), "ob1");
  // A variable already in the environment wins over the default (it is inherited as is).
  auto e = LaunchEnvironmentOverrides({}, {{"OMPI_MCA_btl", "self,tcp"}});
  EXPECT_EQ(e.count("OMPI_MCA_btl"), 0u);
  EXPECT_EQ(e.at("OMPI_MCA_pml"), "ob1");
  // The spec's launch.env wins over both.
  auto s = LaunchEnvironmentOverrides({{"OMPI_MCA_btl", "self,vader,tcp"}, {"X", "1"}},
                                      {{"OMPI_MCA_btl", "self,tcp"}});
  EXPECT_EQ(s.at("OMPI_MCA_btl"), "self,vader,tcp");
  EXPECT_EQ(s.at("X"), "1");
}

TEST(LaunchSettingsTest, SbatchArgumentVector) {
  SlurmLaunchSettings s;
  s.slurm.partition = "gpu";
  s.slurm.time_limit_minutes = 7;
  s.slurm.sbatch_args = {"--exclusive"};
  LaunchRequest r = Request(2);
  r.nodes = 2;
  r.ranks_per_node = 1;
  r.cpus_per_rank = 3;
  auto a = SbatchArguments(s, r, "/runs/s/abc/attempt-2/job.sh", false);
  auto has = [&](const std::string& x) { return std::find(a.begin(), a.end(), x) != a.end(); };
  EXPECT_TRUE(has("--nodes=2"));
  EXPECT_TRUE(has("--ntasks-per-node=1"));
  EXPECT_TRUE(has("--cpus-per-task=3"));
  EXPECT_TRUE(has("--time=7"));
  EXPECT_TRUE(has("--partition=gpu"));
  EXPECT_TRUE(has("--exclusive"));
  // The script, then mpirun and the runner as plain arguments.
  auto script = std::find(a.begin(), a.end(), "/runs/s/abc/attempt-2/job.sh");
  ASSERT_NE(script, a.end());
  EXPECT_EQ(*(script + 1), "mpirun");
  EXPECT_EQ(a.back(), "/runs/s/abc/attempt-2/config.json");
  // The allocation's cores are the job's: three per rank, pinned.
  EXPECT_TRUE(has("slot:PE=3"));
  auto bind = std::find(a.begin(), a.end(), "--bind-to");
  ASSERT_NE(bind, a.end());
  EXPECT_EQ(*(bind + 1), "core");
  // Checkpoints: SIGUSR2 before the limit (120 s by default), never a requeue into this attempt.
  EXPECT_TRUE(has("--signal=B:USR2@120"));
  EXPECT_TRUE(has("--no-requeue"));
  EXPECT_LT(std::find(a.begin(), a.end(), "--signal=B:USR2@120"), script);
  s.slurm.time_limit_minutes = 1;  // capped at half the limit
  a = SbatchArguments(s, r, "/runs/s/abc/attempt-2/job.sh", false);
  EXPECT_TRUE(has("--signal=B:USR2@30"));
  s.slurm.signal_seconds = 0;  // off
  a = SbatchArguments(s, r, "/runs/s/abc/attempt-2/job.sh", false);
  for (const auto& x : a) EXPECT_EQ(x.find("--signal"), std::string::npos) << x;
}

TEST(LaunchSettingsTest, UserProgramRanksGetTheirEnvironmentOnEveryNode) {
  LocalLaunchSettings s;
  s.pool_slots = 2;
  LaunchRequest r = Request(2);
  Program p;
  p.builtin = false;
  p.command = {"/usr/bin/python3", "train.py"};
  LaunchTools tools{"/b/batchlab-runner", "/b/batchlab-rank"};
  r.rank_command = RankCommand(p, tools, r.config_path);
  r.env = ProgramEnvironment(r.config_path, "", 29511);
  EXPECT_EQ(r.env.at("MASTER_ADDR"), "127.0.0.1");
  EXPECT_EQ(r.env.at("MASTER_PORT"), "29511");
  EXPECT_EQ(r.env.at("BATCHLAB_CONFIG"), r.config_path);
  auto args = MpirunArguments(s, r, false, 2);
  // mpirun forwards each variable by name, then batchlab-rank runs the program with --config.
  EXPECT_EQ(args, (std::vector<std::string>{
                      "-np", "2", "--bind-to", "core", "-x", "BATCHLAB_CONFIG", "-x", "MASTER_ADDR",
                      "-x", "MASTER_PORT", "/b/batchlab-rank", "--", "/usr/bin/python3", "train.py",
                      "--config", "/runs/s/abc/attempt-2/config.json"}));
  // torchrun-style: batchlab-rank starts the ranks itself.
  EXPECT_EQ(SpawnCommand(p, tools, 3, "/c.json"),
            (std::vector<std::string>{"/b/batchlab-rank", "--spawn", "3", "--", "/usr/bin/python3",
                                      "train.py", "--config", "/c.json"}));
  // Under Slurm, torchrun-style ranks are Slurm tasks.
  SlurmLaunchSettings ss;
  r.launch = LaunchMode::kTorchrun;
  auto a = SbatchArguments(ss, r, "/runs/s/abc/attempt-2/job.sh", false);
  auto script = std::find(a.begin(), a.end(), "/runs/s/abc/attempt-2/job.sh");
  ASSERT_NE(script, a.end());
  EXPECT_EQ(*(script + 1), "srun");
  EXPECT_EQ(std::find(a.begin(), a.end(), "mpirun"), a.end());
}

TEST(LaunchSettingsTest, FreePortsAreDistinct) {
  auto a = FreeTcpPort();
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_GT(*a, 0);
  auto b = FreeTcpPort({*a});
  ASSERT_TRUE(b.ok());
  EXPECT_NE(*a, *b);
}

TEST(LaunchSettingsTest, EtaFromObservedRunTimes) {
  ProgressCounts c;
  EXPECT_LT(EstimateRemainingSeconds(c), 0);  // unknown before any run ended
  c.waiting = 10;
  c.running = 2;
  c.mean_run_seconds = 6;
  c.parallelism = 2;
  EXPECT_DOUBLE_EQ(EstimateRemainingSeconds(c), (10 + 1) * 6 / 2.0);
}

TEST(RunnerLocatorTest, FlagEnvironmentBuildTreeOrder) {
  testing::TempDir dir;
  fs::create_directories(dir.path() + "/build/cli");
  fs::create_directories(dir.path() + "/build/runner");
  std::string self = dir.path() + "/build/cli/batchlab";
  std::string tree_runner = dir.path() + "/build/runner/batchlab-runner";
  std::ofstream(tree_runner) << "#!/bin/sh\n";
  fs::permissions(tree_runner, fs::owner_all);
  unsetenv("BATCHLAB_RUNNER");
  auto found = LocateRunner("", self);
  ASSERT_TRUE(found.ok()) << found.status().message();
  EXPECT_EQ(*found, fs::path(tree_runner).lexically_normal().string());

  std::string env_runner = dir.path() + "/env-runner";
  std::ofstream(env_runner) << "#!/bin/sh\n";
  fs::permissions(env_runner, fs::owner_all);
  setenv("BATCHLAB_RUNNER", env_runner.c_str(), 1);
  EXPECT_EQ(*LocateRunner("", self), env_runner);
  EXPECT_EQ(*LocateRunner(tree_runner, self), fs::path(tree_runner).lexically_normal().string());
  auto missing = LocateRunner(dir.path() + "/nope", self);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("--runner"), std::string::npos);
  unsetenv("BATCHLAB_RUNNER");
  // Nothing in the tree and nothing in PATH: NOT_FOUND saying how to fix it.
  std::string saved_path = std::getenv("PATH") ? std::getenv("PATH") : "";
  setenv("PATH", dir.path().c_str(), 1);
  auto none = LocateRunner("", dir.path() + "/elsewhere/cli/batchlab");
  setenv("PATH", saved_path.c_str(), 1);
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("--runner PATH or set BATCHLAB_RUNNER"),
            std::string::npos);
}

}  // namespace
}  // namespace batchlab::orchestrator
