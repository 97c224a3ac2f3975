// Precision names, the bf16 CPU autocast guard on a real LibTorch layer, and the dynamic loss
// scaler's state machine.
#include "runner/config/precision.h"

#include <limits>
#include <string>

#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "runner/config/runner_error.h"

namespace batchlab::runner {
namespace {

TEST(PrecisionTest, ParsesNamesAndRejectsOthersNamingTheField) {
  EXPECT_EQ(ParsePrecision("fp32"), Precision::kFp32);
  EXPECT_EQ(ParsePrecision("bf16"), Precision::kBf16);
  EXPECT_STREQ(PrecisionName(Precision::kBf16), "bf16");
  for (const char* bad : {"fp8", "BF16", ""}) {
    try {
      ParsePrecision(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const RunnerError& e) {
      EXPECT_EQ(e.exit_code(), 2);
      EXPECT_EQ(std::string(e.what()).rfind("precision:", 0), 0u) << e.what();
    }
  }
  // fp16 parses everywhere; the Trainer refuses it on the CPU (runner_device_test).
  EXPECT_EQ(ParsePrecision("fp16"), Precision::kFp16);
}

TEST(PrecisionTest, Bf16GuardRunsLinearInBfloat16AndRestoresState) {
  torch::manual_seed(1);
  torch::nn::Linear layer(8, 4);
  torch::Tensor x = torch::randn({5, 8});
  torch::Tensor reference = layer->forward(x);
  EXPECT_EQ(reference.scalar_type(), torch::kFloat32);
  torch::Tensor y;
  {
    AutocastGuard guard(Precision::kBf16, /*cuda=*/false);
    EXPECT_TRUE(at::autocast::is_cpu_enabled());
    y = layer->forward(x);
    EXPECT_EQ(y.scalar_type(), torch::kBFloat16);
  }
  EXPECT_FALSE(at::autocast::is_cpu_enabled());
  EXPECT_EQ(layer->forward(x).scalar_type(), torch::kFloat32);
  // bf16 keeps ~3 significant digits: close to fp32, and not bit-identical.
  EXPECT_TRUE(torch::allclose(y.to(torch::kFloat32), reference, 0.05, 0.05));
  // Gradients flow back to the float32 parameters.
  y.to(torch::kFloat32).sum().backward();
  EXPECT_EQ(layer->weight.grad().scalar_type(), torch::kFloat32);
  EXPECT_GT(layer->weight.grad().abs().sum().item<double>(), 0);

  AutocastGuard none(Precision::kFp32, /*cuda=*/false);
  EXPECT_EQ(layer->forward(x).scalar_type(), torch::kFloat32);
}

TEST(LossScalerTest, SkipsAndBacksOffOnOverflowGrowsAfterInterval) {
  LossScalerOptions o;
  o.initial_scale = 1024;
  o.growth_interval = 2;
  DynamicLossScaler scaler(o);
  torch::Tensor w = torch::ones({3}, torch::requires_grad());
  EXPECT_DOUBLE_EQ(scaler.Scale(torch::tensor(0.5)).item<double>(), 512.0);

  // A finite step: gradients are divided by the scale.
  w.mutable_grad() = torch::full({3}, 2048.0);
  EXPECT_TRUE(scaler.UnscaleAndCheck({w.grad()}));
  EXPECT_TRUE(torch::equal(w.grad(), torch::full({3}, 2.0)));
  scaler.Update();
  EXPECT_DOUBLE_EQ(scaler.scale(), 1024);  // one good step < interval

  // Overflow: skip, halve the scale, restart the count.
  w.mutable_grad() = torch::tensor({1.0f, std::numeric_limits<float>::infinity(), 0.0f});
  EXPECT_FALSE(scaler.UnscaleAndCheck({w.grad()}));
  scaler.Update();
  EXPECT_DOUBLE_EQ(scaler.scale(), 512);
  EXPECT_EQ(scaler.skipped_steps(), 1);

  // Two finite steps in a row: the scale doubles.
  for (int i = 0; i < 2; ++i) {
    w.mutable_grad() = torch::ones({3});
    EXPECT_TRUE(scaler.UnscaleAndCheck({w.grad()}));
    scaler.Update();
  }
  EXPECT_DOUBLE_EQ(scaler.scale(), 1024);

  // NaN too, across several gradients, with one host read: skip.
  torch::Tensor v = torch::ones({2}, torch::requires_grad());
  w.mutable_grad() = torch::ones({3});
  v.mutable_grad() = torch::tensor({std::numeric_limits<float>::quiet_NaN(), 1.0f});
  EXPECT_FALSE(scaler.UnscaleAndCheck({w.grad(), v.grad()}));
  scaler.Update();
  EXPECT_DOUBLE_EQ(scaler.scale(), 512);
  EXPECT_EQ(scaler.skipped_steps(), 2);

  // A checkpoint's state restores the whole machine: one more good step doubles the scale.
  DynamicLossScaler resumed(o);
  resumed.Restore(scaler.scale(), 1, scaler.skipped_steps());
  w.mutable_grad() = torch::ones({3});
  EXPECT_TRUE(resumed.UnscaleAndCheck({w.grad()}));
  resumed.Update();
  EXPECT_DOUBLE_EQ(resumed.scale(), 1024);
  EXPECT_EQ(resumed.skipped_steps(), 2);
}

}  // namespace
}  // namespace batchlab::runner
