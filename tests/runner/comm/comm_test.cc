// Single-process tests of the communicator layer: backend selection and its errors, rank info
// from launcher variables, bucket layout, and gradient buckets with real autograd and LibTorch
// optimizers on a one-rank gloo group. (Two-rank collectives: comm_mpirun_test.cc.)
#include <cstdlib>
#include <map>
#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "runner/comm/communicator.h"
#include "runner/comm/gradient_buckets.h"
#include "runner/config/runner_error.h"

namespace batchlab::runner {
namespace {

std::string BadConfigMessage(const CommConfig& config) {
  try {
    MakeCommunicator(config, RankInfo{});
  } catch (const RunnerError& e) {
    EXPECT_EQ(e.kind(), RunnerError::Kind::kBadConfig);
    EXPECT_EQ(e.exit_code(), 2);
    return e.what();
  }
  ADD_FAILURE() << "expected BadConfig for backend " << config.backend;
  return "";
}

TEST(MakeCommunicatorTest, UnknownBackendNamesFieldAndListsBuiltOnes) {
  CommConfig c;
  c.backend = "carrier-pigeon";
  const std::string msg = BadConfigMessage(c);
  EXPECT_NE(msg.find("comm.backend"), std::string::npos) << msg;
  EXPECT_NE(msg.find("carrier-pigeon"), std::string::npos) << msg;
  EXPECT_NE(msg.find(BuiltBackends()), std::string::npos) << msg;
  EXPECT_NE(BuiltBackends().find("gloo"), std::string::npos);
}

#ifndef BATCHLAB_WITH_NCCL
TEST(MakeCommunicatorTest, NcclWithoutCudaBuildSaysNotBuilt) {
  CommConfig c;
  c.backend = "nccl";
  const std::string msg = BadConfigMessage(c);
  EXPECT_NE(msg.find("comm.backend"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not built"), std::string::npos) << msg;
}
#endif

TEST(MakeCommunicatorTest, NonPositiveBucketSizeNamesField) {
  CommConfig c;
  c.backend = "gloo";
  c.bucket_mb = 0;
  EXPECT_NE(BadConfigMessage(c).find("comm.bucket_mb"), std::string::npos);
  EXPECT_THROW(GradientBuckets({torch::zeros({3})}, -1.0), RunnerError);
}

// Sets launcher variables for one test and restores the environment afterwards.
class ScopedEnv {
 public:
  explicit ScopedEnv(const std::map<std::string, std::string>& vars) {
    for (const char* name : kAll) {
      if (const char* v = std::getenv(name)) saved_[name] = v;
      unsetenv(name);
    }
    for (const auto& [k, v] : vars) setenv(k.c_str(), v.c_str(), 1);
  }
  ~ScopedEnv() {
    for (const char* name : kAll) unsetenv(name);
    for (const auto& [k, v] : saved_) setenv(k.c_str(), v.c_str(), 1);
  }

 private:
  static constexpr const char* kAll[] = {"OMPI_COMM_WORLD_RANK",
                                         "OMPI_COMM_WORLD_SIZE",
                                         "OMPI_COMM_WORLD_LOCAL_RANK",
                                         "OMPI_COMM_WORLD_LOCAL_SIZE",
                                         "MPI_LOCALNRANKS",
                                         "PMI_RANK",
                                         "PMI_SIZE",
                                         "MPI_LOCALRANKID",
                                         "SLURM_PROCID",
                                         "SLURM_NTASKS",
                                         "SLURM_LOCALID",
                                         "OMPI_MCA_ess_base_jobid",
                                         "PMIX_NAMESPACE",
                                         "SLURM_JOB_ID"};
  std::map<std::string, std::string> saved_;
};

TEST(RankInfoTest, ReadsLauncherVariablesInPriorityOrder) {
  {
    ScopedEnv env({});
    RankInfo r = RankInfoFromEnvironment();
    EXPECT_EQ(r.rank, 0);
    EXPECT_EQ(r.world_size, 1);
  }
  {
    ScopedEnv env({{"OMPI_COMM_WORLD_RANK", "3"},
                   {"OMPI_COMM_WORLD_SIZE", "4"},
                   {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                   {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                   {"SLURM_PROCID", "0"},
                   {"SLURM_NTASKS", "8"}});
    RankInfo r = RankInfoFromEnvironment();
    EXPECT_EQ(r.rank, 3);
    EXPECT_EQ(r.world_size, 4);
    EXPECT_EQ(r.local_rank, 1);
    EXPECT_EQ(r.local_size, 2);
  }
  {
    ScopedEnv env({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "6"}, {"SLURM_LOCALID", "2"}});
    RankInfo r = RankInfoFromEnvironment();
    EXPECT_EQ(r.rank, 5);
    EXPECT_EQ(r.world_size, 6);
    EXPECT_EQ(r.local_rank, 2);
    EXPECT_EQ(r.local_size, 0);  // srun does not say
  }
  {
    ScopedEnv env({{"PMI_RANK", "x1"}, {"PMI_SIZE", "2"}});
    EXPECT_THROW(RankInfoFromEnvironment(), RunnerError);
  }
  {
    ScopedEnv env({{"SLURM_PROCID", "2"}, {"SLURM_NTASKS", "2"}});
    EXPECT_THROW(RankInfoFromEnvironment(), RunnerError);
  }
}

TEST(RankInfoTest, DefaultRendezvousSitsNextToMetricsAndNamesTheJob) {
  ScopedEnv env(std::map<std::string, std::string>{{"OMPI_MCA_ess_base_jobid", "4242"}});
  EXPECT_EQ(DefaultRendezvous("/runs/s/abc/attempt-1/metrics.jsonl"),
            "/runs/s/abc/attempt-1/metrics.jsonl.gloo-store.4242");
}

TEST(GradientBucketsTest, LayoutRespectsCapacityOrderAndDtype) {
  // float32 params of 10, 20, 30, 5 elements (40, 80, 120, 20 bytes), then a float64 one.
  std::vector<torch::Tensor> params = {torch::zeros({10}), torch::zeros({4, 5}), torch::zeros({30}),
                                       torch::zeros({5}), torch::zeros({2}, torch::kFloat64)};
  GradientBuckets buckets(params, /*bucket_mb=*/128.0 / (1024 * 1024));  // 128-byte buckets
  ASSERT_EQ(buckets.num_buckets(), 4);
  EXPECT_EQ(buckets.bucket_numel(0), 30);  // 40 + 80 bytes
  EXPECT_EQ(buckets.bucket_numel(1), 30);  // 120 bytes; +20 would overflow
  EXPECT_EQ(buckets.bucket_numel(2), 5);
  EXPECT_EQ(buckets.bucket_numel(3), 2);  // dtype change
  EXPECT_EQ(buckets.total_bytes(), 65 * 4 + 2 * 8);
  GradientBuckets one(params, 25.0);
  EXPECT_EQ(one.num_buckets(), 2);  // everything float32 fits in one bucket
}

// Real autograd and LibTorch optimizers on a one-rank gloo group (HashStore): gradients live in
// the buckets; zero_grad (which detaches in place) and set_to_none both keep working.
TEST(GradientBucketsTest, WorksWithAutogradAndOptimizerZeroGrad) {
  CommConfig c;
  c.backend = "gloo";
  auto comm = MakeCommunicator(c, RankInfo{});
  EXPECT_EQ(comm->size(), 1);
  torch::manual_seed(7);
  torch::nn::Linear model(3, 2);
  GradientBuckets buckets(model->parameters(), 25.0);
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1));
  const auto timeout = std::chrono::milliseconds(10000);
  buckets.BroadcastParameters(*comm, timeout);

  torch::Tensor x = torch::randn({4, 3});
  for (int step = 0; step < 3; ++step) {
    if (step == 2) {
      model->zero_grad(/*set_to_none=*/true);  // fresh gradient tensors from autograd
    } else {
      opt.zero_grad();
    }
    torch::Tensor loss = model->forward(x).square().sum();
    loss.backward();
    // Reference gradient computed independently of the buckets.
    torch::Tensor ref = (2 * model->forward(x).detach()).t().mm(x);
    buckets.AllreduceGradients(*comm, timeout);
    EXPECT_TRUE(torch::allclose(model->weight.grad(), ref, 1e-5, 1e-5)) << "step " << step;
    const double want = model->weight.grad().to(torch::kFloat64).square().sum().item<double>() +
                        model->bias.grad().to(torch::kFloat64).square().sum().item<double>();
    EXPECT_NEAR(buckets.GradSquaredNorm(), want, 1e-9 * want);
    opt.step();
  }
}

}  // namespace
}  // namespace batchlab::runner
