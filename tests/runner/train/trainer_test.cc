// The training loop in-process on one rank, on real data: determinism, accumulation equivalence,
// gradient-noise measurement against the closed-form truth, and the stop outcomes.
#include "runner/train/trainer.h"

#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "runner/data/dataset.h"
#include "runner/config/device.h"
#include "runner/config/runner_error.h"

#include "tests/support/temp_dir.h"

namespace batchlab::runner {
namespace {

using nlohmann::json;

// A small synthetic-linear run: d = 8, logreg, plain SGD, every knob overridable via `patch`.
RunConfig SyntheticConfig(const json& patch = json::object()) {
  json j = json::parse(R"({
    "batch_size": 64, "seed": 3,
    "data": {"name": "synthetic-linear", "features": 8, "samples": 4096, "test_samples": 512,
             "noise": 0.5},
    "model": {"name": "logreg"},
    "optimizer": {"name": "sgd"},
    "lr": {"base": 0.05, "base_batch_size": 64},
    "budget": {"steps": 20}, "gns": {"every_steps": 0}, "eval": {"every_steps": 0}})");
  j.merge_patch(patch);
  return ParseRunConfig(j, 1);
}

std::vector<json> ReadLines(const std::string& path) {
  std::vector<json> lines;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) lines.push_back(json::parse(line));
  return lines;
}

TEST(TrainerTest, SameConfigAndSeedGiveTheSameLossCurve) {
  DataConfig dc;
  dc.samples = 2048;
  const Dataset data = LoadDataset(dc);  // real Fashion-MNIST, first 2048 rows
  const RunConfig c =
      ParseRunConfig(json::parse(R"({"batch_size": 32, "seed": 5, "data": {"samples": 2048},
                      "model": {"name": "mlp", "hidden": [32]}, "budget": {"steps": 40}})"),
                     1);
  Trainer a(c, data, nullptr, nullptr, 0), b(c, data, nullptr, nullptr, 0);
  a.Run();
  b.Run();
  ASSERT_EQ(a.losses().size(), 40u);
  EXPECT_EQ(a.losses(), b.losses());  // bit for bit
  EXPECT_TRUE(torch::equal(a.FlatParameters(), b.FlatParameters()));
  EXPECT_LT(a.losses().back(), a.losses().front());  // it learns

  RunConfig other = c;
  other.seed = 6;
  Trainer d(other, data, nullptr, nullptr, 0);
  d.Run();
  EXPECT_NE(a.losses(), d.losses());
}

// Where a rank trains (runner/config/device.h): BATCHLAB_DEVICE picks, and asking for what is not
// there fails naming the variable; fp16 (loss scaling) needs a CUDA device; the start line says
// where and how the run trained.
TEST(TrainerTest, DeviceChoiceFp16OnTheCpuAndTheStartLine) {
  const bool cuda = torch::cuda::is_available();
  unsetenv("BATCHLAB_DEVICE");
  EXPECT_EQ(ChooseCudaDevice(0), cuda ? 0 : -1);
  setenv("BATCHLAB_DEVICE", "cpu", 1);
  EXPECT_EQ(ChooseCudaDevice(0), -1);
  for (const char* bad : {"tpu", "cuda"}) {
    if (std::string(bad) == "cuda" && cuda) continue;
    setenv("BATCHLAB_DEVICE", bad, 1);
    try {
      ChooseCudaDevice(0);
      ADD_FAILURE() << "accepted BATCHLAB_DEVICE=" << bad;
    } catch (const RunnerError& e) {
      EXPECT_EQ(e.exit_code(), 2);
      EXPECT_EQ(std::string(e.what()).rfind("BATCHLAB_DEVICE:", 0), 0u) << e.what();
    }
  }
  unsetenv("BATCHLAB_DEVICE");

  RunConfig c = SyntheticConfig(json::parse(R"({"budget": {"steps": 3}})"));
  const Dataset data = LoadDataset(c.data);
  RunConfig fp16 = c;
  fp16.precision = "fp16";  // past the config check, as on a GPU node whose rank is on the CPU
  try {
    Trainer t(fp16, data, nullptr, nullptr, 0);
    ADD_FAILURE() << "fp16 accepted on the CPU";
  } catch (const RunnerError& e) {
    EXPECT_EQ(e.exit_code(), 2);
    EXPECT_EQ(std::string(e.what()).rfind("precision: \"fp16\" needs a CUDA device", 0), 0u)
        << e.what();
  }

  c.precision = "bf16";
  ::batchlab::testing::TempDir dir;
  const std::string path = dir.File("device.jsonl");
  {
    std::unique_ptr<MetricsWriter> out = MetricsWriter::Open(path);
    Trainer t(c, data, nullptr, out.get(), 0);
    t.Run();
  }
  const std::vector<json> lines = ReadLines(path);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0]["kind"], "start");
  EXPECT_EQ(lines[0]["device"], "cpu");
  EXPECT_EQ(lines[0]["precision"], "bf16");
}

TEST(TrainerTest, AccumulationIsTheSameUpdate) {
  const RunConfig plain = SyntheticConfig(json::parse(R"({"budget": {"steps": 3}})"));
  const Dataset data = LoadDataset(plain.data);
  Trainer t1(plain, data, nullptr, nullptr, 0);
  const torch::Tensor init = t1.FlatParameters();
  t1.Run();
  for (int a : {2, 4, 8}) {
    RunConfig acc = SyntheticConfig(
        json::parse(R"({"budget": {"steps": 3}, "accumulation": )" + std::to_string(a) + "}"));
    Trainer ta(acc, data, nullptr, nullptr, 0);
    EXPECT_TRUE(torch::equal(ta.FlatParameters(), init));
    ta.Run();
    EXPECT_FALSE(torch::allclose(t1.FlatParameters(), init));  // the steps moved the weights
    EXPECT_TRUE(torch::allclose(ta.FlatParameters(), t1.FlatParameters(), 1e-5, 1e-6))
        << "accumulation " << a << " max diff "
        << (ta.FlatParameters() - t1.FlatParameters()).abs().max().item<float>();
    for (size_t i = 0; i < t1.losses().size(); ++i) {
      EXPECT_NEAR(ta.losses()[i], t1.losses()[i], 1e-5);
    }
  }
  // Measuring the noise on one rank without accumulation splits the batch in two: same update.
  RunConfig measured = SyntheticConfig(json::parse(R"({"budget": {"steps": 3},
                                                       "gns": {"every_steps": 1}})"));
  Trainer tm(measured, data, nullptr, nullptr, 0);
  tm.Run();
  EXPECT_TRUE(torch::allclose(tm.FlatParameters(), t1.FlatParameters(), 1e-5, 1e-6));
}

// comm.sync "lag" on full batches (the gradient is a function of the weights alone): step 1
// applies nothing, step 2 applies step 1's gradient, which was taken at the same weights as step
// 2's, and the end applies step 2's. So 2 lagged steps are w - 2 lr g(w): one allreduce step at
// twice the LR. Another step in, the stale gradient makes lag differ from allreduce.
TEST(TrainerTest, LagAppliesEachGradientOneStepLate) {
  const json full_batch = json::parse(R"({"batch_size": 256, "data": {"samples": 256},
                                         "budget": {"steps": 2}, "comm": {"sync": "lag"}})");
  const RunConfig lag = SyntheticConfig(full_batch);
  const Dataset data = LoadDataset(lag.data);
  Trainer lagged(lag, data, nullptr, nullptr, 0);
  const torch::Tensor init = lagged.FlatParameters();
  lagged.Run();
  RunConfig one = SyntheticConfig(full_batch);
  one.comm.sync = SyncMode::kAllreduce;
  one.budget.steps = 1;
  one.lr.base *= 2;
  Trainer once(one, data, nullptr, nullptr, 0);
  once.Run();
  EXPECT_FALSE(torch::allclose(once.FlatParameters(), init));
  EXPECT_TRUE(torch::allclose(lagged.FlatParameters(), once.FlatParameters(), 1e-5, 1e-6))
      << (lagged.FlatParameters() - once.FlatParameters()).abs().max().item<float>();
  ASSERT_EQ(lagged.losses().size(), 2u);
  EXPECT_NEAR(lagged.losses()[0], lagged.losses()[1], 1e-6);  // the same weights twice

  RunConfig three = SyntheticConfig(full_batch);
  three.budget.steps = 3;
  Trainer lag3(three, data, nullptr, nullptr, 0);
  lag3.Run();
  three.comm.sync = SyncMode::kAllreduce;
  Trainer sync3(three, data, nullptr, nullptr, 0);
  sync3.Run();
  EXPECT_FALSE(torch::allclose(lag3.FlatParameters(), sync3.FlatParameters(), 1e-4, 1e-5));
  EXPECT_GT(lag3.losses()[2], sync3.losses()[2]);  // a stale step makes less progress here
}

// McCandlish et al.'s estimator applied to the logged squared norms recovers the true noise
// scale of the synthetic task (the learning rate is tiny, so the weights stay put).
TEST(TrainerTest, NoiseMeasurementMatchesTheClosedFormTruth) {
  ::batchlab::testing::TempDir dir;
  const std::string path = dir.File("gns.jsonl");
  const RunConfig c = SyntheticConfig(json::parse(R"({
      "batch_size": 256, "accumulation": 8, "lr": {"base": 1e-9}, "budget": {"steps": 400},
      "gns": {"every_steps": 1}, "data": {"samples": 65536}})"));
  const Dataset data = LoadDataset(c.data);
  std::unique_ptr<MetricsWriter> out = MetricsWriter::Open(path);
  Trainer t(c, data, nullptr, out.get(), 0);
  EXPECT_EQ(t.Run(), Outcome::kCompleted);
  double sq_small = 0, sq_big = 0, true_b = 0;
  int n = 0;
  for (const json& line : ReadLines(path)) {
    if (line["kind"] != "step") continue;
    ASSERT_EQ(line["gns_b_small"], 32);
    ASSERT_EQ(line["gns_b_big"], 256);
    sq_small += line["gns_sq_small"].get<double>();
    sq_big += line["gns_sq_big"].get<double>();
    true_b = line["gns_true_b_simple"].get<double>();
    ++n;
  }
  ASSERT_EQ(n, 400);
  sq_small /= n, sq_big /= n;
  const double bs = 32, bb = 256;
  const double g2 = (bb * sq_big - bs * sq_small) / (bb - bs);
  const double trace = (sq_small - sq_big) / (1 / bs - 1 / bb);
  const double b_simple = trace / g2;
  EXPECT_GT(true_b, 9.0);  // d + 1 + ... for d = 8 with a bias: at least d + 2
  EXPECT_NEAR(b_simple / true_b, 1.0, 0.15) << "estimated " << b_simple << " true " << true_b;
}

TEST(TrainerTest, OutcomesTargetDivergenceBudget) {
  {
    ::batchlab::testing::TempDir dir;
    const std::string path = dir.File("target.jsonl");
    const RunConfig c = SyntheticConfig(json::parse(R"({
        "budget": {"steps": 200}, "eval": {"every_steps": 10},
        "target": {"metric": "test_loss", "op": "<=", "value": 0.3}})"));
    const Dataset data = LoadDataset(c.data);
    std::unique_ptr<MetricsWriter> out = MetricsWriter::Open(path);
    Trainer t(c, data, nullptr, out.get(), 0);
    EXPECT_EQ(t.Run(), Outcome::kTargetReached);
    EXPECT_LT(t.steps_done(), 200);
    EXPECT_EQ(t.steps_done() % 10, 0);
    const json end = ReadLines(path).back();
    EXPECT_EQ(end["kind"], "end");
    EXPECT_EQ(end["outcome"], "target_reached");
    EXPECT_EQ(end["target_step"], t.steps_done());
    EXPECT_LE(end["final_test_loss"].get<double>(), 0.3);
    EXPECT_EQ(ExitCodeFor(Outcome::kTargetReached), 3);
  }
  {
    const RunConfig c = SyntheticConfig(json::parse(R"({"budget": {"steps": 30},
        "target": {"metric": "test_loss", "op": "<=", "value": 0.0}})"));
    const Dataset data = LoadDataset(c.data);
    Trainer t(c, data, nullptr, nullptr, 0);
    EXPECT_EQ(t.Run(), Outcome::kBudgetExhausted);
    EXPECT_EQ(t.steps_done(), 30);
  }
  {
    const RunConfig c = SyntheticConfig(json::parse(R"({"lr": {"base": 5.0}})"));
    const Dataset data = LoadDataset(c.data);
    Trainer t(c, data, nullptr, nullptr, 0);
    EXPECT_EQ(t.Run(), Outcome::kDiverged);
    EXPECT_LT(t.steps_done(), 20);
  }
  {  // budgets: samples rounds up to whole steps; epochs counts this rank's shard
    const RunConfig s =
        SyntheticConfig(json::parse(R"({"budget": {"steps": null, "samples": 1000}})"));
    const Dataset data = LoadDataset(s.data);
    EXPECT_EQ(Trainer(s, data, nullptr, nullptr, 0).total_steps(), 16);
    const RunConfig e =
        SyntheticConfig(json::parse(R"({"budget": {"steps": null, "epochs": 0.5}})"));
    EXPECT_EQ(Trainer(e, data, nullptr, nullptr, 0).total_steps(), 32);  // 4096 / 64 / 2
    const RunConfig t = SyntheticConfig(
        json::parse(R"({"budget": {"steps": null, "seconds": 0.3}, "model": {"name": "logreg"}})"));
    Trainer timed(t, data, nullptr, nullptr, 0);
    EXPECT_EQ(timed.Run(), Outcome::kCompleted);
    EXPECT_GT(timed.steps_done(), 1);
  }
}

TEST(TrainerTest, Bf16TrainsAndStaysFinite) {
  const RunConfig c =
      SyntheticConfig(json::parse(R"({"precision": "bf16", "budget": {"steps": 50}})"));
  const Dataset data = LoadDataset(c.data);
  Trainer t(c, data, nullptr, nullptr, 0);
  EXPECT_EQ(t.Run(), Outcome::kCompleted);
  EXPECT_LT(t.losses().back(), 0.5 * t.losses().front());
  const RunConfig f = SyntheticConfig(json::parse(R"({"budget": {"steps": 50}})"));
  Trainer t32(f, data, nullptr, nullptr, 0);
  t32.Run();
  EXPECT_NE(t.losses(), t32.losses());  // bf16 really changed the arithmetic
}

}  // namespace
}  // namespace batchlab::runner
