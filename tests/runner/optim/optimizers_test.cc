// LARS and LAMB against updates computed by hand on a tiny tensor; FusedSgd against LibTorch's
// SGD; the factory's names, weight decay wiring, learning-rate setting; bad optimizer input
// through the config parser.
#include <cmath>
#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "runner/optim/fused_sgd.h"
#include "runner/optim/lamb.h"
#include "runner/optim/lars.h"
#include "runner/optim/optimizer_factory.h"
#include "runner/config/run_config.h"
#include "runner/config/runner_error.h"

namespace batchlab::runner {
namespace {

torch::Tensor T(std::initializer_list<double> v, bool matrix) {
  torch::Tensor t = torch::tensor(std::vector<double>(v), torch::kFloat64);
  return matrix ? t.view({1, -1}).clone() : t;
}

void SetGrad(torch::Tensor& p, std::initializer_list<double> g) {
  p.mutable_grad() = T(g, p.dim() == 2);
}

void ExpectValues(const torch::Tensor& t, std::initializer_list<double> want, double tol) {
  torch::Tensor flat = t.reshape({-1});
  ASSERT_EQ(flat.numel(), static_cast<int64_t>(want.size()));
  int64_t i = 0;
  for (double w : want) {
    EXPECT_NEAR(flat[i].item<double>(), w, tol) << "element " << i;
    ++i;
  }
}

// w = [[3, 4]] (|w| = 5), g = [[0.6, 0.8]] (|g| = 1), lr 0.1, momentum 0.9, wd 0.1, eta 0.01.
TEST(LarsTest, MatchesHandComputedUpdate) {
  torch::Tensor w = T({3, 4}, true);
  torch::Tensor b = T({1, -2}, false);  // a bias: no decay, no trust ratio
  Lars opt({w, b}, LarsOptions(0.1).momentum(0.9).weight_decay(0.1).trust_coefficient(0.01));

  SetGrad(w, {0.6, 0.8});
  SetGrad(b, {0.5, 0.5});
  opt.step();
  // λ = 0.01 * 5 / (1 + 0.1 * 5) = 1/30; d = g + 0.1 w = [0.9, 1.2];
  // v = 0.1 * λ * d = [0.003, 0.004]; w = [2.997, 3.996].
  EXPECT_NEAR(opt.StateOf(w)->trust_ratio(), 1.0 / 30.0, 1e-15);
  ExpectValues(w, {2.997, 3.996}, 1e-12);
  // bias: v = 0.1 * g = [0.05, 0.05]
  EXPECT_DOUBLE_EQ(opt.StateOf(b)->trust_ratio(), 1.0);
  ExpectValues(b, {0.95, -2.05}, 1e-12);

  // Second step, same gradient: |w| = 4.995; λ = 0.04995 / (1 + 0.4995);
  // d = [0.6 + 0.2997, 0.8 + 0.3996]; v = 0.9 * [0.003, 0.004] + 0.1 * λ * d.
  SetGrad(w, {0.6, 0.8});
  SetGrad(b, {0.5, 0.5});
  opt.step();
  const double lambda2 = 0.04995 / 1.4995;
  const double v0 = 0.0027 + 0.1 * lambda2 * 0.8997;
  const double v1 = 0.0036 + 0.1 * lambda2 * 1.1996;
  ExpectValues(w, {2.997 - v0, 3.996 - v1}, 1e-12);
  ExpectValues(b, {0.95 - 0.095, -2.05 - 0.095}, 1e-12);  // v = 0.9 * 0.05 + 0.05
}

TEST(LarsTest, OneDimensionalParametersAdaptWhenNotExcluded) {
  torch::Tensor b = T({3, 4}, false);
  Lars opt(
      {b},
      LarsOptions(0.1).momentum(0).weight_decay(0).trust_coefficient(0.01).exclude_bias_and_norm(
          false));
  SetGrad(b, {0.6, 0.8});
  opt.step();
  // λ = 0.01 * 5 / 1 = 0.05; w = w - 0.1 * 0.05 * g
  ExpectValues(b, {3 - 0.003, 4 - 0.004}, 1e-12);
}

// w = [[3, 4]], g = [[0.6, 0.8]], lr 0.1, betas 0.9/0.999, eps 1e-6, wd 0.1.
TEST(LambTest, MatchesHandComputedUpdate) {
  torch::Tensor w = T({3, 4}, true);
  torch::Tensor b = T({1, -2}, false);
  Lamb opt({w, b}, LambOptions(0.1).beta1(0.9).beta2(0.999).eps(1e-6).weight_decay(0.1));
  SetGrad(w, {0.6, 0.8});
  SetGrad(b, {0.5, -0.25});
  opt.step();
  // Step 1: m̂ = g, v̂ = g², so r = g / (|g| + eps) + 0.1 w (elementwise |g|).
  const double r0 = 0.6 / (0.6 + 1e-6) + 0.3, r1 = 0.8 / (0.8 + 1e-6) + 0.4;
  const double ratio = 5.0 / std::sqrt(r0 * r0 + r1 * r1);
  EXPECT_NEAR(opt.StateOf(w)->trust_ratio(), ratio, 1e-12);
  ExpectValues(w, {3 - 0.1 * ratio * r0, 4 - 0.1 * ratio * r1}, 1e-12);
  // Bias: an Adam step, no decay: b -= 0.1 * g / (|g| + eps).
  ExpectValues(b, {1 - 0.1 * 0.5 / (0.5 + 1e-6), -2 + 0.1 * 0.25 / (0.25 + 1e-6)}, 1e-12);

  // Step 2 with g2 = [[0.2, -0.4]]: moments and bias corrections by hand.
  const double w0 = 3 - 0.1 * ratio * r0, w1 = 4 - 0.1 * ratio * r1;
  SetGrad(w, {0.2, -0.4});
  SetGrad(b, {0.5, -0.25});
  opt.step();
  const double m0 = 0.9 * 0.06 + 0.1 * 0.2, m1 = 0.9 * 0.08 + 0.1 * -0.4;
  const double s0 = 0.999 * 0.001 * 0.36 + 0.001 * 0.04, s1 = 0.999 * 0.001 * 0.64 + 0.001 * 0.16;
  const double bc1 = 1 - 0.81, bc2 = 1 - 0.999 * 0.999;
  const double q0 = (m0 / bc1) / (std::sqrt(s0 / bc2) + 1e-6) + 0.1 * w0;
  const double q1 = (m1 / bc1) / (std::sqrt(s1 / bc2) + 1e-6) + 0.1 * w1;
  const double ratio2 = std::sqrt(w0 * w0 + w1 * w1) / std::sqrt(q0 * q0 + q1 * q1);
  EXPECT_EQ(opt.StateOf(w)->step(), 2);
  ExpectValues(w, {w0 - 0.1 * ratio2 * q0, w1 - 0.1 * ratio2 * q1}, 1e-12);
}

// FusedSgd against LibTorch's own SGD over five steps with a changing LR, for every combination
// of its options: fused tensors (contiguous float32, and a channels-last weight with a
// channels-last gradient, as the cnn has) and the tensor-operation path (a channels-last weight
// with a contiguous gradient, and a float64 tensor).
TEST(FusedSgdTest, MatchesLibTorchSgd) {
  struct Case {
    double momentum, dampening, decay;
    bool nesterov;
  };
  for (const Case c : {Case{0, 0, 0, false}, Case{0, 0, 0.01, false}, Case{0.9, 0, 0, false},
                       Case{0.9, 0.1, 5e-4, false}, Case{0.9, 0, 5e-4, true}}) {
    SCOPED_TRACE("momentum " + std::to_string(c.momentum) + " dampening " +
                 std::to_string(c.dampening) + " decay " + std::to_string(c.decay) +
                 (c.nesterov ? " nesterov" : ""));
    torch::manual_seed(3);
    std::vector<torch::Tensor> ours = {
        torch::randn({7, 33}), torch::randn({5}),
        torch::randn({4, 3, 5, 5}).contiguous(torch::MemoryFormat::ChannelsLast),
        torch::randn({4, 3, 5, 5}).contiguous(torch::MemoryFormat::ChannelsLast),
        torch::randn({6}, torch::kFloat64)};
    std::vector<torch::Tensor> theirs;
    for (auto& t : ours) {
      theirs.push_back(t.clone().requires_grad_(true));  // clone keeps the memory format
      t.requires_grad_(true);
    }
    std::vector<torch::Tensor> start;
    for (const auto& t : ours) start.push_back(t.detach().clone());
    torch::optim::SGDOptions o(0.1);
    o.momentum(c.momentum).dampening(c.dampening).weight_decay(c.decay).nesterov(c.nesterov);
    FusedSgd fused(ours, o);
    torch::optim::SGD plain(theirs, o);
    for (int step = 0; step < 5; ++step) {
      for (size_t i = 0; i < ours.size(); ++i) {
        torch::Tensor g = torch::randn(ours[i].sizes(), ours[i].options());  // contiguous
        if (i == 3) g = g.contiguous(torch::MemoryFormat::ChannelsLast);       // like the param
        ours[i].mutable_grad() = g.clone();
        theirs[i].mutable_grad() = g.clone();
      }
      SetLearningRate(fused, 0.1 * (step + 1));
      SetLearningRate(plain, 0.1 * (step + 1));
      fused.step();
      plain.step();
    }
    for (size_t i = 0; i < ours.size(); ++i) {
      EXPECT_TRUE(torch::allclose(ours[i], theirs[i], 1e-6, 1e-6)) << "parameter " << i;
      EXPECT_FALSE(torch::allclose(ours[i], start[i])) << "parameter " << i << " did not move";
    }
    const auto our_state = OptimizerStateTensors(fused, ours);
    const auto their_state = OptimizerStateTensors(plain, theirs);
    ASSERT_EQ(our_state.size(), c.momentum != 0 ? ours.size() : 0u);
    ASSERT_EQ(our_state.size(), their_state.size());
    for (size_t i = 0; i < our_state.size(); ++i) {
      EXPECT_TRUE(torch::allclose(our_state[i], their_state[i], 1e-6, 1e-6)) << "buffer " << i;
    }
  }
}

torch::OrderedDict<std::string, torch::Tensor> TwoParams() {
  torch::OrderedDict<std::string, torch::Tensor> p;
  p.insert("fc.weight", torch::full({2, 3}, 1.0, torch::kFloat64));
  p.insert("fc.bias", torch::full({2}, 1.0, torch::kFloat64));
  return p;
}

TEST(OptimizerFactoryTest, EveryNameBuildsAndDecaysWeights) {
  for (const char* name : {"sgd", "momentum", "nesterov", "adam", "adamw", "lars", "lamb"}) {
    SCOPED_TRACE(name);
    OptimizerConfig c;
    c.name = name;
    c.weight_decay = 2.0;
    c.exclude_bias_and_norm = false;
    c.trust_coefficient = 1.0;
    auto params = TwoParams();
    auto opt = MakeOptimizer(c, params, 0.1);
    ASSERT_NE(opt, nullptr);
    // A small gradient pushing weights up (Adam-style steps would add ~lr); only weight decay
    // can pull every weight below its start.
    for (auto& p : params.values()) p.mutable_grad() = torch::full_like(p, -1e-3);
    opt->step();
    for (const auto& p : params.values()) EXPECT_LT(p.max().item<double>(), 1.0 - 1e-3);
  }
}

TEST(OptimizerFactoryTest, ReturnsOurLarsAndLambAndSetsLearningRate) {
  OptimizerConfig c;
  c.name = "lars";
  auto params = TwoParams();
  auto opt = MakeOptimizer(c, params, 0.1);
  EXPECT_NE(dynamic_cast<Lars*>(opt.get()), nullptr);
  SetLearningRate(*opt, 0.25);
  for (const auto& g : opt->param_groups()) EXPECT_DOUBLE_EQ(g.options().get_lr(), 0.25);
  c.name = "lamb";
  auto lamb = MakeOptimizer(c, params, 0.1);
  EXPECT_NE(dynamic_cast<Lamb*>(lamb.get()), nullptr);
  c.name = "nesterov";
  auto sgd = MakeOptimizer(c, params, 0.1);
  SetLearningRate(*sgd, 0.03);
  EXPECT_DOUBLE_EQ(sgd->param_groups()[0].options().get_lr(), 0.03);
}

// The optimizer's fields are checked once, against the declaration, when the config is parsed:
// each bad value below exits 2 naming its path (no range of the optimizers' own).
void ExpectBadConfig(const nlohmann::json& optimizer, const std::string& field) {
  nlohmann::json config = {{"batch_size", 64}, {"optimizer", optimizer}};
  try {
    ParseRunConfig(config, 1);
    FAIL() << "expected BadConfig naming " << field;
  } catch (const RunnerError& e) {
    EXPECT_EQ(e.exit_code(), 2);
    EXPECT_EQ(std::string(e.what()).rfind(field + ": ", 0), 0u) << e.what();
  }
}

TEST(OptimizerFactoryTest, BadInputNamesTheField) {
  ExpectBadConfig({{"name", "rmsprop"}}, "optimizer.name");
  ExpectBadConfig({{"name", "nesterov"}, {"momentum", 0}}, "optimizer.momentum");
  ExpectBadConfig({{"momentum", 1.0}}, "optimizer.momentum");
  ExpectBadConfig({{"weight_decay", -1}}, "optimizer.weight_decay");
  ExpectBadConfig({{"name", "lamb"}, {"beta2", 1.0}}, "optimizer.beta2");
  ExpectBadConfig({{"name", "adam"}, {"eps", 0}}, "optimizer.eps");
  ExpectBadConfig({{"name", "lars"}, {"trust_coefficient", 0}}, "optimizer.trust_coefficient");
  OptimizerConfig c;
  c.name = "rmsprop";  // a name that bypassed the parser: the factory's dispatch names the field
  auto params = TwoParams();
  EXPECT_THROW(MakeOptimizer(c, params, 0.1), RunnerError);
}

}  // namespace
}  // namespace batchlab::runner
