// Two-rank tests of a real communicator, run by CTest as
//   mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 comm_mpirun_test --backend=B
// for B in mpi, gloo: allreduce, broadcast, barrier, Wait timeouts, gradient buckets against one
// fused allreduce and against the mean computed locally, and bit-identical parameters after
// training steps. Every rank runs every test; mpirun fails if any rank fails.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "runner/comm/communicator.h"
#include "runner/comm/gradient_buckets.h"
#include "runner/config/runner_error.h"

namespace batchlab::runner {
namespace {

std::string g_backend = "mpi";
const std::chrono::milliseconds kTimeout(60000);

std::string JobId() {
  const char* id = std::getenv("OMPI_MCA_ess_base_jobid");
  return id != nullptr ? id : "nojob";
}

// A directory both ranks share for this launch (side channels and the gloo FileStore).
std::string SharedDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp != nullptr ? tmp : "/tmp") + "/batchlab-comm-test-" + JobId();
  mkdir(dir.c_str(), 0700);  // EEXIST on the second rank is fine
  return dir;
}

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

class CommTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    CommConfig c;
    c.backend = g_backend;
    c.rendezvous = DefaultRendezvous(SharedDir() + "/metrics.jsonl");
    comm_ = MakeCommunicator(c, RankInfoFromEnvironment()).release();
  }
  static void TearDownTestSuite() {
    delete comm_;
    comm_ = nullptr;
  }
  static Communicator* comm_;
};
Communicator* CommTest::comm_ = nullptr;

TEST_F(CommTest, TwoRanksMatchingTheLauncher) {
  ASSERT_EQ(comm_->size(), 2);
  EXPECT_EQ(comm_->rank(), RankInfoFromEnvironment().rank);
  EXPECT_STREQ(comm_->backend(), g_backend.c_str());
}

TEST_F(CommTest, AllreduceSumsAndAverages) {
  const double r = comm_->rank();
  torch::Tensor f = torch::arange(5, torch::kFloat32) * (r + 1);  // rank 0: x, rank 1: 2x
  comm_->Allreduce(f, ReduceOp::kSum)->Wait(kTimeout);
  EXPECT_TRUE(torch::equal(f, torch::arange(5, torch::kFloat32) * 3));
  torch::Tensor d = torch::full({3, 3}, r + 1, torch::kFloat64);
  comm_->Allreduce(d, ReduceOp::kAvg)->Wait(kTimeout);
  EXPECT_TRUE(torch::equal(d, torch::full({3, 3}, 1.5, torch::kFloat64)));
  torch::Tensor i = torch::full({2}, static_cast<int64_t>(10 * (r + 1)), torch::kInt64);
  comm_->Allreduce(i, ReduceOp::kSum)->Wait(kTimeout);
  EXPECT_EQ(i[1].item<int64_t>(), 30);
}

TEST_F(CommTest, BroadcastCopiesTheRootsValues) {
  for (int root : {0, 1}) {
    torch::Tensor t = torch::full({4}, comm_->rank() * 100.0 + 7, torch::kFloat32);
    comm_->Broadcast(t, root)->Wait(kTimeout);
    EXPECT_TRUE(torch::equal(t, torch::full({4}, root * 100.0 + 7, torch::kFloat32)))
        << "root " << root;
  }
}

TEST_F(CommTest, BarrierOrdersSideEffects) {
  const std::string flag = SharedDir() + "/barrier-" + g_backend;
  if (comm_->rank() == 1) std::ofstream(flag) << "1";  // before the barrier
  comm_->Barrier()->Wait(kTimeout);
  EXPECT_TRUE(Exists(flag));  // rank 1 wrote it before entering, we left after it entered
  comm_->Barrier()->Wait(kTimeout);
  if (comm_->rank() == 0) std::remove(flag.c_str());
}

// Rank 0 waits with a short timeout for an allreduce rank 1 has not joined: it must get a
// RunnerError naming the backend; then rank 1 joins and the same work completes. Rank 1 only
// joins after rank 0 has seen the timeout (a file), so no clock decides the outcome.
TEST_F(CommTest, WaitTimesOutThenTheSameWorkCompletes) {
  const std::string flag = SharedDir() + "/timed-out-" + g_backend;
  torch::Tensor t = torch::full({8}, comm_->rank() + 1.0, torch::kFloat32);
  if (comm_->rank() == 0) {
    auto work = comm_->Allreduce(t, ReduceOp::kSum);
    try {
      work->Wait(std::chrono::milliseconds(50));
      ADD_FAILURE() << "Wait returned before rank 1 joined";
    } catch (const RunnerError& e) {
      EXPECT_EQ(e.kind(), RunnerError::Kind::kComm);
      EXPECT_NE(std::string(e.what()).find(g_backend), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("rank 0"), std::string::npos) << e.what();
    }
    std::ofstream(flag) << "1";
    work->Wait(kTimeout);
  } else {
    while (!Exists(flag)) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    comm_->Allreduce(t, ReduceOp::kSum)->Wait(kTimeout);
  }
  EXPECT_TRUE(torch::equal(t, torch::full({8}, 3.0, torch::kFloat32)));
  comm_->Barrier()->Wait(kTimeout);
  if (comm_->rank() == 0) std::remove(flag.c_str());
}

// Parameters of assorted shapes; gradients drawn from a generator seeded by (rank, step), so
// every rank can compute the expected mean on its own.
std::vector<torch::Tensor> Params() {
  return {torch::zeros({3, 5}), torch::zeros({7}), torch::zeros({1000}), torch::zeros({2, 2}),
          torch::zeros({64, 33})};
}
std::vector<torch::Tensor> GradsOf(int rank, int step) {
  torch::manual_seed(1000 * step + rank);
  std::vector<torch::Tensor> grads;
  for (const auto& p : Params()) grads.push_back(torch::randn(p.sizes()));
  return grads;
}

TEST_F(CommTest, BucketsOfAnySizeEqualOneFusedAllreduce) {
  const int step = 3;
  // Reference 1: the mean computed locally from both ranks' generators.
  std::vector<torch::Tensor> g0 = GradsOf(0, step), g1 = GradsOf(1, step);
  // Reference 2: one fused allreduce of all gradients concatenated.
  std::vector<torch::Tensor> mine = GradsOf(comm_->rank(), step), flat_parts;
  for (const auto& g : mine) flat_parts.push_back(g.reshape({-1}));
  torch::Tensor fused = torch::cat(flat_parts);
  comm_->Allreduce(fused, ReduceOp::kAvg)->Wait(kTimeout);

  for (double bucket_mb : {1e-5, 4096.0 / (1 << 20), 0.01, 25.0}) {
    SCOPED_TRACE(bucket_mb);
    std::vector<torch::Tensor> params = Params();
    GradientBuckets buckets(params, bucket_mb);
    for (size_t i = 0; i < params.size(); ++i) params[i].mutable_grad().copy_(mine[i]);
    buckets.AllreduceGradients(*comm_, kTimeout);
    int64_t offset = 0;
    for (size_t i = 0; i < params.size(); ++i) {
      const torch::Tensor& g = params[i].grad();
      EXPECT_TRUE(torch::equal(g.reshape({-1}), fused.narrow(0, offset, g.numel())))
          << "param " << i;
      EXPECT_TRUE(torch::allclose(g, (g0[i] + g1[i]) / 2, 1e-6, 1e-6)) << "param " << i;
      offset += g.numel();
    }
    if (bucket_mb == 1e-5) {
      EXPECT_EQ(buckets.num_buckets(), 5);  // every parameter alone
    }
    if (bucket_mb == 25.0) {
      EXPECT_EQ(buckets.num_buckets(), 1);  // all fused
    }
    // A replaced gradient tensor (set_to_none + fresh backward) is copied in, then re-viewed.
    params[1].mutable_grad() = torch::full({7}, comm_->rank() == 0 ? 1.0f : 3.0f);
    buckets.AllreduceGradients(*comm_, kTimeout);
    EXPECT_TRUE(torch::equal(params[1].grad(), torch::full({7}, 2.0f)));
    EXPECT_TRUE(torch::allclose(params[0].grad(), (g0[0] + g1[0]) / 2, 1e-6, 1e-6));
  }
}

// A tiny model trained with rank-dependent data: after broadcasting rank 0's initial weights,
// averaged gradients and the same optimizer keep the parameters bit-identical on both ranks.
TEST_F(CommTest, RanksHoldBitIdenticalParametersAfterEverySteps) {
  torch::manual_seed(100 + comm_->rank());  // different initial weights per rank
  torch::nn::Sequential model(torch::nn::Linear(6, 8), torch::nn::Tanh(), torch::nn::Linear(8, 3));
  GradientBuckets buckets(model->parameters(), /*bucket_mb=*/0.0005);
  buckets.BroadcastParameters(*comm_, kTimeout);
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  for (int step = 0; step < 5; ++step) {
    torch::Tensor x = torch::randn({16, 6});
    torch::Tensor y = torch::randint(0, 3, {16});
    opt.zero_grad();
    torch::nn::functional::cross_entropy(model->forward(x), y).backward();
    buckets.AllreduceGradients(*comm_, kTimeout);
    opt.step();
    for (const auto& p : model->parameters()) {
      torch::Tensor theirs = p.detach().clone();
      comm_->Broadcast(theirs, 0)->Wait(kTimeout);
      ASSERT_TRUE(torch::equal(p.detach(), theirs)) << "step " << step;
    }
  }
}

TEST(CommTcpTest, GlooRendezvousOverTcpStore) {
  if (g_backend != "gloo") GTEST_SKIP() << "gloo only";
  CommConfig c;
  c.backend = "gloo";
  c.rendezvous = "127.0.0.1:" + std::to_string(20000 + std::atoi(JobId().c_str()) % 20000);
  auto comm = MakeCommunicator(c, RankInfoFromEnvironment());
  torch::Tensor t = torch::full({3}, comm->rank() + 1.0, torch::kFloat32);
  comm->Allreduce(t, ReduceOp::kAvg)->Wait(kTimeout);
  EXPECT_TRUE(torch::equal(t, torch::full({3}, 1.5, torch::kFloat32)));
}

TEST(CommFileStoreTest, StoreFileIsRemovedWhenEveryRankHasClosedIt) {
  if (g_backend != "gloo") GTEST_SKIP() << "gloo only";
  const std::string path = SharedDir() + "/own-store";
  {
    CommConfig c;
    c.backend = "gloo";
    c.rendezvous = path;
    auto comm = MakeCommunicator(c, RankInfoFromEnvironment());
    comm->Barrier()->Wait(kTimeout);
    EXPECT_TRUE(Exists(path));
  }
  // Both ranks have destroyed their group; meet again over a fresh store to compare notes.
  CommConfig c;
  c.backend = "gloo";
  c.rendezvous = path + "-after";
  auto comm = MakeCommunicator(c, RankInfoFromEnvironment());
  comm->Barrier()->Wait(kTimeout);
  EXPECT_FALSE(Exists(path));
}

}  // namespace
}  // namespace batchlab::runner

namespace batchlab::runner {

// `--abandon`: rank 1 fails (exit 3) after Abandon() while rank 0 waits in an allreduce with a
// long timeout. The job must end with rank 1's exit code long before that timeout, because
// mpirun stops it as soon as rank 1 is gone (CTest checks the code; its TIMEOUT catches a hang).
int AbandonScenario() {
  CommConfig c;
  c.backend = g_backend;
  const char* tmp = std::getenv("TMPDIR");
  // No shared directory here (rank 0 may be killed before it could remove it); the gloo store
  // file removes itself once both ranks have closed it.
  c.rendezvous =
      DefaultRendezvous(std::string(tmp != nullptr ? tmp : "/tmp") + "/batchlab-comm-abandon");
  auto comm = MakeCommunicator(c, RankInfoFromEnvironment());
  comm->Barrier()->Wait(kTimeout);
  if (comm->rank() == 1) {
    comm->Abandon();
    return 3;
  }
  torch::Tensor t = torch::ones({4});
  try {
    comm->Allreduce(t, ReduceOp::kSum)->Wait(std::chrono::seconds(240));
    std::fprintf(stderr, "rank 0: allreduce completed without rank 1\n");
  } catch (const RunnerError& e) {
    std::fprintf(stderr, "rank 0: %s\n", e.what());  // gloo: peer closed the connection
  }
  return 0;
}

// `--hang`: rank 1 never joins; rank 0's AllreduceNow (the gradient buckets' blocking path) has
// a 2 s timeout. Its watchdog must end rank 0 with exit 1 and the reason on stderr, and mpirun
// the job, long before rank 1's 120 s sleep is over (CTest checks the code, the message and the
// time).
int HangScenario() {
  CommConfig c;
  c.backend = g_backend;
  auto comm = MakeCommunicator(c, RankInfoFromEnvironment());
  comm->Barrier()->Wait(kTimeout);
  if (comm->rank() == 1) {
    std::this_thread::sleep_for(std::chrono::seconds(120));
    return 0;
  }
  torch::Tensor t = torch::ones({4});
  comm->AllreduceNow(t, ReduceOp::kAvg, std::chrono::seconds(2));
  std::fprintf(stderr, "rank 0: allreduce completed without rank 1\n");
  return 0;
}

}  // namespace batchlab::runner

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  bool abandon = false, hang = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--backend=", 0) == 0) batchlab::runner::g_backend = arg.substr(10);
    if (arg == "--abandon") abandon = true;
    if (arg == "--hang") hang = true;
  }
  if (abandon) return batchlab::runner::AbandonScenario();
  if (hang) return batchlab::runner::HangScenario();
  const int failed = RUN_ALL_TESTS();
  rmdir(batchlab::runner::SharedDir().c_str());  // succeeds on the rank that leaves it empty
  return failed;
}
