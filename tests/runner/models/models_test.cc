// Model shapes and sizes from the config, and the cnn's refusal of non-image data.
#include "runner/models/models.h"

#include <gtest/gtest.h>

#include "runner/config/runner_error.h"

namespace batchlab::runner {
namespace {

Dataset Images(int64_t n, int64_t classes) {
  Dataset d;
  d.name = "test-images";
  d.train_x = torch::rand({n, 28 * 28});
  d.train_y = torch::randint(classes, {n}, torch::kInt64);
  d.test_x = d.train_x, d.test_y = d.train_y;
  d.classes = classes;
  d.image_shape = {1, 28, 28};
  return d;
}

TEST(ModelsTest, ShapesAndParameterCountsFollowTheConfig) {
  const Dataset d = Images(8, 10);
  ModelConfig c;
  c.name = "logreg";
  auto logreg = MakeModel(c, d);
  EXPECT_EQ(logreg->ParameterCount(), 784 * 10 + 10);
  c.name = "mlp";
  c.hidden = {32, 16};
  auto mlp = MakeModel(c, d);
  EXPECT_EQ(mlp->ParameterCount(), 784 * 32 + 32 + 32 * 16 + 16 + 16 * 10 + 10);
  EXPECT_EQ(mlp->forward(d.train_x).sizes(), torch::IntArrayRef({8, 10}));
  c.name = "cnn";
  c.hidden = {64};
  c.channels = {4, 8};
  auto cnn = MakeModel(c, d);
  // conv1 1->4 5x5, conv2 4->8 5x5, fc1 8*7*7 -> 64, fc2 64 -> 10
  EXPECT_EQ(cnn->ParameterCount(),
            (25 * 4 + 4) + (4 * 25 * 8 + 8) + (8 * 49 * 64 + 64) + (64 * 10 + 10));
  EXPECT_EQ(cnn->forward(d.train_x).sizes(), torch::IntArrayRef({8, 10}));
  c.bias = false;
  EXPECT_EQ(MakeModel(c, d)->ParameterCount(), 25 * 4 + 4 * 25 * 8 + 8 * 49 * 64 + 64 * 10);
}

TEST(ModelsTest, CnnLearnsAndRejectsPlainRows) {
  torch::manual_seed(0);
  Dataset d = Images(64, 2);
  // A learnable rule: class-1 images have a brighter left half.
  const torch::Tensor y = d.train_y;
  torch::Tensor img = d.train_x.view({64, 28, 28});
  img.narrow(2, 0, 14).add_(y.to(torch::kFloat32).view({64, 1, 1}));
  ModelConfig c;
  c.name = "cnn";
  c.channels = {4, 8};
  c.hidden = {32};
  auto cnn = MakeModel(c, d);
  torch::optim::Adam opt(cnn->parameters(), torch::optim::AdamOptions(1e-2));
  double first = 0, last = 0;
  for (int i = 0; i < 30; ++i) {
    opt.zero_grad();
    torch::Tensor loss = torch::nn::functional::cross_entropy(cnn->forward(d.train_x), y);
    loss.backward();
    opt.step();
    (i == 0 ? first : last) = loss.item<double>();
  }
  EXPECT_LT(last, 0.5 * first);

  Dataset rows = d;
  rows.image_shape.clear();
  try {
    MakeModel(c, rows);
    FAIL() << "no error";
  } catch (const RunnerError& e) {
    EXPECT_EQ(e.exit_code(), 2);
    EXPECT_NE(std::string(e.what()).find("model.name: \"cnn\" needs image data"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace batchlab::runner
