// GPU slots (orchestrator/plan/gpu_slots.h, docs/spec.md "GPU slots"), all without a GPU: the
// scheduler's second resource, the allocator, GPU counting, CUDA_VISIBLE_DEVICES in a run's
// environment (through a real local launch of a stand-in mpirun), the Slurm GPU request, the
// spec field's validation and the refusal of a run that needs more GPUs than the pool.
#include "orchestrator/plan/gpu_slots.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "orchestrator/spec/expansion.h"
#include "orchestrator/launch/local_launcher.h"
#include "orchestrator/plan/scheduler.h"
#include "orchestrator/launch/slurm_launcher.h"
#include "orchestrator/spec/spec.h"
#include "orchestrator/launch/worker_pool.h"
#include "tests/support/expect_invalid_spec.h"
#include "tests/support/temp_dir.h"

namespace batchlab::orchestrator {
namespace {

using testing::TempDir;

// --- scheduler: GPUs as a second resource -------------------------------------------------------

QueuedJob Q(int key, int slots, double seconds, int gpus) {
  QueuedJob j;
  j.key = key;
  j.slots = slots;
  j.expected_seconds = seconds;
  j.gpus = gpus;
  return j;
}

TEST(GpuSchedulerTest, GpuRunWaitsWhileGpusAreBusyThoughSlotsAreFree) {
  LptQueue q(8);
  q.Add(Q(0, 1, 9, 2));
  q.Add(Q(1, 1, 8, 2));
  // 8 free slots but 3 free GPUs: only the first 2-GPU run starts.
  EXPECT_EQ(q.TakeStartable(8, 3, 0, nullptr), std::vector<int>({0}));
  // 7 slots free, 1 GPU free: the second still waits.
  EXPECT_EQ(q.TakeStartable(7, 1, 0, nullptr), std::vector<int>());
  EXPECT_EQ(q.GpusOf(1), 2);
  EXPECT_EQ(q.TakeStartable(7, 3, 0, nullptr), std::vector<int>({1}));
  EXPECT_TRUE(q.empty());
}

TEST(GpuSchedulerTest, CpuOnlyRunsBackfillWhileAGpuRunWaits) {
  LptQueue q(4);
  q.Add(Q(0, 2, 50, 4));  // longest, needs 4 GPUs
  q.Add(Q(1, 1, 5, 0));   // CPU only
  q.Add(Q(2, 1, 3, 0));   // CPU only
  q.Add(Q(3, 1, 2, 1));   // 1 GPU
  // 4 slots, 1 GPU free: the 4-GPU run waits; the CPU runs and the 1-GPU run fill the slots.
  EXPECT_EQ(q.TakeStartable(4, 1, 0, nullptr), std::vector<int>({1, 2, 3}));
  EXPECT_EQ(q.size(), 1u);
  // Once the GPUs are free it starts.
  EXPECT_EQ(q.TakeStartable(4, 4, 1, nullptr), std::vector<int>({0}));
}

TEST(GpuSchedulerTest, GpusAreNeverClampedAndTheOldOverloadsIgnoreThem) {
  LptQueue q(2);
  q.Add(Q(0, 1, 1, 16));
  EXPECT_EQ(q.GpusOf(0), 16);  // slots are clamped to the pool, GPUs are not
  EXPECT_EQ(q.TakeStartable(2, 8, 0, nullptr), std::vector<int>());
  EXPECT_EQ(q.TakeStartable(2, 0), std::vector<int>({0}));  // GPUs not counted
}

TEST(GpuSchedulerTest, LowerBoundAndSimulationCountGpuSeconds) {
  // Four 1-slot runs of 10 s, each on 2 GPUs, on 8 slots and 2 GPUs: one at a time.
  std::vector<QueuedJob> jobs;
  for (int i = 0; i < 4; ++i) jobs.push_back(Q(i, 1, 10, 2));
  EXPECT_DOUBLE_EQ(MakespanLowerBound(jobs, 8), 10.0);     // slots alone: all at once
  EXPECT_DOUBLE_EQ(MakespanLowerBound(jobs, 8, 2), 40.0);  // GPU-seconds / GPUs
  EXPECT_DOUBLE_EQ(SimulateMakespan(jobs, 8, 2), 40.0);
  EXPECT_DOUBLE_EQ(SimulateMakespan(jobs, 8, 4), 20.0);
  // CPU runs beside them are backfilled: the makespan stays 40.
  for (int i = 4; i < 10; ++i) jobs.push_back(Q(i, 1, 10, 0));
  EXPECT_DOUBLE_EQ(SimulateMakespan(jobs, 8, 2), 40.0);
}

// --- the allocator ------------------------------------------------------------------------------

TEST(GpuAllocatorTest, NeverHandsOneIdToTwoHolders) {
  GpuAllocator a(4);
  auto x = a.Allocate(3);
  ASSERT_TRUE(x);
  EXPECT_EQ(*x, std::vector<int>({0, 1, 2}));
  EXPECT_FALSE(a.Allocate(2));  // only one left
  auto y = a.Allocate(1);
  ASSERT_TRUE(y);
  EXPECT_EQ(*y, std::vector<int>({3}));
  EXPECT_EQ(a.free(), 0);
  EXPECT_FALSE(a.Allocate(1));
  auto none = a.Allocate(0);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
}

TEST(GpuAllocatorTest, ReleaseGivesIdsBackAndIdsAreStable) {
  GpuAllocator a(4);
  auto x = *a.Allocate(2);  // 0, 1
  auto y = *a.Allocate(2);  // 2, 3
  a.Release(x);
  EXPECT_EQ(a.free(), 2);
  EXPECT_EQ(*a.Allocate(2), x);  // the same ids again: the lowest free
  a.Release(y);
  a.Release(y);        // twice: harmless
  a.Release({7, -1});  // not ids of this pool: ignored
  EXPECT_EQ(a.free(), 2);
  EXPECT_EQ(*a.Allocate(1), std::vector<int>({2}));
  EXPECT_EQ(a.total(), 4);
}

TEST(GpuAllocatorTest, RandomAllocationsNeverOverlap) {
  GpuAllocator a(8);
  std::vector<std::vector<int>> held;
  unsigned seed = 7;
  for (int step = 0; step < 2000; ++step) {
    seed = seed * 1103515245u + 12345u;
    if (!held.empty() && (seed >> 16) % 3 == 0) {
      const size_t k = (seed >> 8) % held.size();
      a.Release(held[k]);
      held.erase(held.begin() + static_cast<std::ptrdiff_t>(k));
      continue;
    }
    auto ids = a.Allocate(static_cast<int>((seed >> 20) % 4));
    if (ids) held.push_back(*ids);
    std::set<int> seen;
    int count = 0;
    for (const auto& h : held) {
      for (int id : h) {
        EXPECT_TRUE(seen.insert(id).second) << "GPU " << id << " held twice";
        EXPECT_GE(id, 0);
        EXPECT_LT(id, 8);
        ++count;
      }
    }
    EXPECT_EQ(a.free(), 8 - count);
  }
}

// --- counting and naming the GPUs ---------------------------------------------------------------

TEST(GpuCountTest, FromCudaVisibleDevicesElseDeviceFiles) {
  TempDir dir;
  // The layout of a one-H100 machine's /dev (nvidia0, nvidiactl, nvidia-uvm, nvidia-uvm-tools,
  // the folder nvidia-caps), plus two more GPUs.
  for (const char* f :
       {"nvidia0", "nvidia1", "nvidia12", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "null"}) {
    std::ofstream(dir.path() + "/" + f) << "";
  }
  std::filesystem::create_directories(dir.path() + "/nvidia-caps");
  EXPECT_EQ(CountGpus(std::nullopt, dir.path()), 3);
  EXPECT_EQ(CountGpus(std::string("2,3"), dir.path()), 2);
  EXPECT_EQ(CountGpus(std::string(""), dir.path()), 0);        // set and empty: no GPU
  EXPECT_EQ(CountGpus(std::string("-1"), dir.path()), 0);      // the usual "hide every GPU"
  EXPECT_EQ(CountGpus(std::string("0,-1,2"), dir.path()), 1);  // CUDA stops at an invalid entry
  EXPECT_EQ(CountGpus(std::string("GPU-aaaa,GPU-bbbb"), dir.path()), 2);
  EXPECT_EQ(CountGpus(std::nullopt, dir.path() + "/absent"), 0);
}

TEST(GpuCountTest, CudaVisibleDevicesNamesPoolIdsThroughTheOrchestratorsOwn) {
  EXPECT_EQ(CudaVisibleDevices({0, 1}, {}), "0,1");
  EXPECT_EQ(CudaVisibleDevices({2, 3}, {{"PATH", "/bin"}}), "2,3");
  // The orchestrator runs on GPUs 4 and 6: pool id 1 is device 6.
  EXPECT_EQ(CudaVisibleDevices({1}, {{"CUDA_VISIBLE_DEVICES", "4,6"}}), "6");
  EXPECT_EQ(CudaVisibleDevices({0, 1}, {{"CUDA_VISIBLE_DEVICES", "GPU-a,GPU-b"}}), "GPU-a,GPU-b");
  EXPECT_EQ(CudaVisibleDevices({}, {}), "");
}

// --- the launchers ------------------------------------------------------------------------------

LaunchRequest GpuRequest() {
  LaunchRequest r;
  r.run_id = "abc";
  r.world_size = 2;
  r.ranks_per_node = 2;
  r.slots = 2;
  r.gpus_per_rank = 1;
  r.gpu_ids = {2, 3};
  r.rank_command = {"/bin/runner", "--config", "/runs/s/abc/attempt-1/config.json"};
  return r;
}

TEST(GpuLaunchTest, RequestEnvironmentHasTheRunsDevices) {
  LaunchRequest r = GpuRequest();
  r.env = {{"MASTER_PORT", "29500"}};
  auto env = RequestEnvironment(r, {});
  EXPECT_EQ(env.at("CUDA_VISIBLE_DEVICES"), "2,3");
  EXPECT_EQ(env.at("MASTER_PORT"), "29500");
  // Forwarded to every rank.
  LocalLaunchSettings s;
  s.pool_slots = 4;
  auto args = MpirunArguments(s, r, false, 16);
  auto x = std::find(args.begin(), args.end(), "CUDA_VISIBLE_DEVICES");
  ASSERT_NE(x, args.end());
  EXPECT_EQ(*(x - 1), "-x");
  // A run holding no GPU gets no CUDA_VISIBLE_DEVICES from batchlab.
  r.gpu_ids.clear();
  EXPECT_EQ(RequestEnvironment(r, {}).count("CUDA_VISIBLE_DEVICES"), 0u);
  args = MpirunArguments(s, r, false, 16);
  EXPECT_EQ(std::find(args.begin(), args.end(), "CUDA_VISIBLE_DEVICES"), args.end());
}

// A real local launch with a stand-in mpirun that records its environment.
TEST(GpuLaunchTest, LocalLauncherSetsCudaVisibleDevicesInTheRunsEnvironment) {
  TempDir dir;
  const std::string mpirun = dir.path() + "/fake-mpirun";
  {
    std::ofstream out(mpirun);
    out << "#!/bin/sh\necho \"CVD=${CUDA_VISIBLE_DEVICES-unset}\" > "
           "\"$BATCHLAB_ATTEMPT_DIR/env.txt\"\n";
  }
  chmod(mpirun.c_str(), 0755);
  LocalLaunchSettings s;
  s.mpirun = mpirun;
  s.pool_slots = 4;
  auto launcher = MakeLocalLauncher(s);
  auto launch = [&](const std::string& name, std::vector<int> ids) {
    const std::string attempt = dir.path() + "/" + name;
    std::filesystem::create_directories(attempt);
    LaunchRequest r = GpuRequest();
    r.attempt_dir = attempt;
    r.gpu_ids = std::move(ids);
    auto job = launcher->Start(r);
    EXPECT_TRUE(job.ok()) << job.status().message();
    if (!job.ok()) return std::string();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!(*job)->Poll().done && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::ifstream in(attempt + "/env.txt");
    std::string line;
    std::getline(in, line);
    return line;
  };
  EXPECT_EQ(launch("a", {1, 3}), "CVD=1,3");
  EXPECT_EQ(launch("b", {0}), "CVD=0");
}

TEST(GpuLaunchTest, SlurmJobAsksForTheGpus) {
  SlurmLaunchSettings s;
  LaunchRequest r = GpuRequest();
  r.attempt_dir = "/runs/s/abc/attempt-1";
  r.gpus_per_rank = 2;
  auto a = SbatchArguments(s, r, "/runs/s/abc/attempt-1/job.sh", false);
  auto has = [&](const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  EXPECT_TRUE(has(a, "--gpus-per-task=2"));
  EXPECT_TRUE(has(a, "--ntasks-per-node=2"));
  // Before the script: an sbatch option, not an argument of the job.
  EXPECT_LT(std::find(a.begin(), a.end(), "--gpus-per-task=2"),
            std::find(a.begin(), a.end(), "/runs/s/abc/attempt-1/job.sh"));
  // The spec's own GPU request wins.
  s.slurm.sbatch_args = {"--gres=gpu:a100:4"};
  a = SbatchArguments(s, r, "/runs/s/abc/attempt-1/job.sh", false);
  EXPECT_FALSE(has(a, "--gpus-per-task=2"));
  EXPECT_TRUE(has(a, "--gres=gpu:a100:4"));
  // No GPUs: no request.
  s.slurm.sbatch_args.clear();
  r.gpus_per_rank = 0;
  a = SbatchArguments(s, r, "/runs/s/abc/attempt-1/job.sh", false);
  for (const auto& x : a) EXPECT_EQ(x.find("gpu"), std::string::npos) << x;
}

// Warm workers (worker_pool.h) keep the GPUs they started with: a worker serves only runs handed
// the same ids, and an idle worker on a GPU handed to another run is retired before it starts.
class FakeWorkerLauncher final : public Launcher {
 public:
  struct FakeWorker final : Job {
    JobStatus Poll() override {
      JobStatus s;
      s.done = stopped;
      s.exit_code = 0;
      return s;
    }
    void Terminate() override { stopped = true; }
    void Kill() override { stopped = true; }
    bool stopped = false;
  };
  const char* name() const override { return "local"; }
  StatusOr<std::unique_ptr<Job>> Start(const LaunchRequest& r) override {
    started.push_back(r);
    auto job = std::make_unique<FakeWorker>();
    workers.push_back(job.get());
    return std::unique_ptr<Job>(std::move(job));
  }
  void CleanUpStale(const std::string&) override {}
  std::vector<LaunchRequest> started;  // the workers' launches
  std::vector<FakeWorker*> workers;
};

TEST(GpuWorkerPoolTest, WorkersKeepTheirGpusAndIdleOnesOnAGpuNeededElsewhereAreRetired) {
  TempDir dir;
  auto inner = std::make_unique<FakeWorkerLauncher>();
  FakeWorkerLauncher* fake = inner.get();
  WorkerPoolSettings settings;
  settings.runner = "/fake/runner";
  settings.max_workers = 4;
  settings.dir = dir.path() + "/workers";
  auto pool = MakeWorkerPool(std::move(inner), std::move(settings));
  int n = 0;
  // Starts a run holding `ids` and lets its worker report it done (exit 0).
  auto run = [&](std::vector<int> ids) {
    const std::string attempt = dir.path() + "/attempt-" + std::to_string(++n);
    std::filesystem::create_directories(attempt);
    LaunchRequest r = GpuRequest();
    r.world_size = 1;
    r.attempt_dir = attempt;
    r.config_path = attempt + "/config.json";
    r.rank_command = {"/fake/runner", "--config", r.config_path};
    r.gpu_ids = std::move(ids);
    auto job = pool->Start(r);
    EXPECT_TRUE(job.ok()) << job.status().message();
    // The worker that took it: the last one started for these ids.
    std::string wdir;
    for (const auto& w : fake->started) {
      if (w.gpu_ids == r.gpu_ids) wdir = w.attempt_dir;
    }
    for (int k = 1; k <= 8; ++k) {
      if (std::filesystem::exists(wdir + "/job-" + std::to_string(k) + ".json") &&
          !std::filesystem::exists(wdir + "/done-" + std::to_string(k) + ".rank0")) {
        std::ofstream(wdir + "/done-" + std::to_string(k) + ".rank0") << "0\n";
      }
    }
    EXPECT_TRUE((*job)->Poll().done);
  };
  run({0});  // worker 1 on GPU 0
  run({1});  // worker 2 on GPU 1: another shape, worker 1 stays (no GPU shared)
  ASSERT_EQ(fake->started.size(), 2u);
  EXPECT_EQ(fake->started[0].gpu_ids, std::vector<int>({0}));
  EXPECT_EQ(fake->started[1].gpu_ids, std::vector<int>({1}));
  EXPECT_FALSE(fake->workers[0]->stopped);
  run({1});  // the same GPU: worker 2 again, no new worker
  EXPECT_EQ(fake->started.size(), 2u);
  run({0, 1});  // both GPUs: the idle workers on them are retired first
  ASSERT_EQ(fake->started.size(), 3u);
  EXPECT_TRUE(fake->workers[0]->stopped);
  EXPECT_TRUE(fake->workers[1]->stopped);
  EXPECT_FALSE(fake->workers[2]->stopped);
  EXPECT_EQ(fake->started[2].gpu_ids, std::vector<int>({0, 1}));
}

// --- the spec field and the refusal -------------------------------------------------------------

std::string WithResources(const std::string& resources) {
  return R"({"name": "s", "base": {"batch_size": 64}, "resources": )" + resources + "}";
}

TEST(GpuSpecTest, GpusPerRankParsesWithDefaultZero) {
  auto spec = ParseSpec(WithResources("{}"), "t.json");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->resources.gpus_per_rank, 0);
  spec = ParseSpec(WithResources(R"({"gpus_per_rank": 2})"), "t.json");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->resources.gpus_per_rank, 2);
}

TEST(GpuSpecTest, BadGpusPerRankNamesThePathAndTheFix) {
  ExpectInvalid(WithResources(R"({"gpus_per_rank": -1})"),
                {"t.json", "resources.gpus_per_rank", "-1 is not a non-negative integer"});
  ExpectInvalid(WithResources(R"({"gpus_per_rank": "1"})"),
                {"resources.gpus_per_rank", "not a non-negative integer"});
  ExpectInvalid(WithResources(R"({"gpus_per_rank": 0.5})"),
                {"resources.gpus_per_rank", "0.5 is not a whole number of GPUs", "0, 1, 2"});
  ExpectInvalid(WithResources(R"({"gpus_per_rank": 65})"),
                {"resources.gpus_per_rank", "too large: at most 64"});
  ExpectInvalid(WithResources(R"({"gpu_per_rank": 1})"),
                {"resources.gpu_per_rank: unknown field", "gpus_per_rank"});
  ExpectInvalid(R"({"name": "s", "base": {"batch_size": 64}, "resources": {"gpus_per_rank": 1},
                    "launch": {"env": {"CUDA_VISIBLE_DEVICES": "0"}}})",
                {"launch.env.CUDA_VISIBLE_DEVICES", "remove it from launch.env"});
}

TEST(GpuSpecTest, PlannedRunsCountTheirGpusAndTooFewAreRefused) {
  auto spec = ParseSpec(R"({"name": "s", "base": {"batch_size": 64, "mode": "noop"},
                           "axes": {"ranks_per_node": [1, 4]},
                           "resources": {"gpus_per_rank": 2}})",
                        "t.json");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  auto plan = ExpandSpec(*spec, {});
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_EQ(plan->runs.size(), 2u);
  EXPECT_EQ(plan->runs[0].gpus, 2);
  EXPECT_EQ(plan->runs[1].gpus, 8);
  EXPECT_EQ(plan->runs[1].gpus_per_rank, 2);
  EXPECT_EQ(GpuMappingText(plan->runs[1]), "cuda: rank r -> local rank r (8 visible)");
  EXPECT_TRUE(CheckGpuNeeds(*spec, *plan, 8).ok());
  Status st = CheckGpuNeeds(*spec, *plan, 7);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  for (const std::string& n :
       {std::string("resources.gpus_per_rank"), "run " + plan->runs[1].id,
        std::string("needs 8 GPU(s)"), std::string("world_size 4 x gpus_per_rank 2"),
        std::string("pool has 7 GPU(s)"), std::string("--gpus 8"), std::string("fewer ranks")}) {
    EXPECT_NE(st.message().find(n), std::string::npos) << st.message() << "\nmissing: " << n;
  }
  EXPECT_NE(CheckGpuNeeds(*spec, *plan, 0).message().find("pool has 0 GPU(s)"), std::string::npos);
  // A CPU spec needs none.
  auto cpu = ParseSpec(R"({"name": "c", "base": {"batch_size": 64, "mode": "noop"}})", "t.json");
  ASSERT_TRUE(cpu.ok());
  auto cpu_plan = ExpandSpec(*cpu, {});
  ASSERT_TRUE(cpu_plan.ok());
  EXPECT_EQ(cpu_plan->runs[0].gpus, 0);
  EXPECT_EQ(GpuMappingText(cpu_plan->runs[0]), "-");
  EXPECT_TRUE(CheckGpuNeeds(*cpu, *cpu_plan, 0).ok());
}

}  // namespace
}  // namespace batchlab::orchestrator
