// logreg, mlp and cnn (see models.h), registered like any other model (model_registry.h).
#include "runner/models/models.h"

#include <string>
#include <vector>

#include "runner/models/model_registry.h"
#include "runner/config/runner_error.h"

namespace batchlab::runner {
namespace {

namespace nn = torch::nn;

// Logits per class, or one output for regression.
int64_t Outputs(const Dataset& data) { return data.classes > 0 ? data.classes : 1; }

class LogReg : public Model {
 public:
  LogReg(int64_t in, int64_t out, bool bias)
      : linear_(register_module("linear", nn::Linear(nn::LinearOptions(in, out).bias(bias)))) {}
  torch::Tensor forward(torch::Tensor x) override { return linear_->forward(x); }

 private:
  nn::Linear linear_;
};

class Mlp : public Model {
 public:
  Mlp(int64_t in, const std::vector<int64_t>& hidden, int64_t out, bool bias) {
    int64_t width = in;
    for (size_t i = 0; i <= hidden.size(); ++i) {
      const int64_t next = i < hidden.size() ? hidden[i] : out;
      layers_.push_back(register_module("fc" + std::to_string(i),
                                        nn::Linear(nn::LinearOptions(width, next).bias(bias))));
      width = next;
    }
  }
  torch::Tensor forward(torch::Tensor x) override {
    for (size_t i = 0; i + 1 < layers_.size(); ++i) x = torch::relu(layers_[i]->forward(x));
    return layers_.back()->forward(x);
  }

 private:
  std::vector<nn::Linear> layers_;
};

class Cnn : public Model {
 public:
  Cnn(const std::vector<int64_t>& chw, const std::vector<int64_t>& channels, int64_t hidden,
      int64_t out, bool bias)
      : shape_{chw[0], chw[1], chw[2]},
        conv1_(register_module(
            "conv1", nn::Conv2d(nn::Conv2dOptions(chw[0], channels[0], 5).padding(2).bias(bias)))),
        conv2_(register_module(
            "conv2",
            nn::Conv2d(nn::Conv2dOptions(channels[0], channels[1], 5).padding(2).bias(bias)))),
        flat_(channels[1] * (chw[1] / 4) * (chw[2] / 4)),
        fc1_(register_module("fc1", nn::Linear(nn::LinearOptions(flat_, hidden).bias(bias)))),
        fc2_(register_module("fc2", nn::Linear(nn::LinearOptions(hidden, out).bias(bias)))) {
    // Channels-last convolution weights make the convolutions' outputs channels-last, where
    // LibTorch's max pooling is vectorized (its NCHW kernel is not): with the ReLU after the
    // pooling, on a quarter of the values, a step at batch 64 takes about 0.65 of the time
    // (docs/benchmarks.md). Same values: the layout changes no number, and max pooling commutes
    // with the ReLU (both are monotone), gradients included.
    torch::NoGradGuard no_grad;
    // empty_like + copy_, not contiguous(ChannelsLast): with one input channel the NCHW strides
    // already count as channels-last-contiguous, contiguous() keeps them, and the convolution
    // then picks NCHW.
    for (nn::Conv2d* conv : {&conv1_, &conv2_}) {
      torch::Tensor& w = (*conv)->weight;
      w.set_data(torch::empty_like(w, torch::MemoryFormat::ChannelsLast).copy_(w));
    }
  }

  torch::Tensor forward(torch::Tensor x) override {
    x = x.view({-1, shape_[0], shape_[1], shape_[2]});              // [B, C, H, W]
    x = torch::relu(torch::max_pool2d(conv1_->forward(x), 2));      // [B, c1, H/2, W/2]
    x = torch::relu(torch::max_pool2d(conv2_->forward(x), 2));      // [B, c2, H/4, W/4]
    x = torch::relu(fc1_->forward(x.reshape({x.size(0), flat_})));  // [B, hidden], (c, h, w) order
    return fc2_->forward(x);                                        // [B, out]
  }

 private:
  std::vector<int64_t> shape_;
  nn::Conv2d conv1_, conv2_;
  int64_t flat_;
  nn::Linear fc1_, fc2_;
};

std::shared_ptr<Model> MakeLogReg(const ModelConfig& config, const Dataset& data) {
  return std::make_shared<LogReg>(data.features(), Outputs(data), config.bias);
}

std::shared_ptr<Model> MakeMlp(const ModelConfig& config, const Dataset& data) {
  return std::make_shared<Mlp>(data.features(), config.hidden, Outputs(data), config.bias);
}

void CheckCnn(const ModelConfig& config) {
  if (config.channels.size() != 2) {
    throw BadConfig(
        "model.channels: the cnn has two conv blocks; give two channel counts, e.g. [16, 32]");
  }
  if (config.hidden.size() > 1) {
    throw BadConfig("model.hidden: the cnn has one dense hidden layer; give at most one width");
  }
}

std::shared_ptr<Model> MakeCnn(const ModelConfig& config, const Dataset& data) {
  if (data.image_shape.size() != 3 || data.image_shape[1] < 4 || data.image_shape[2] < 4) {
    throw BadConfig(
        "model.name: \"cnn\" needs image data (fashion-mnist or idx images of at least 4x4); "
        "data \"" +
        data.name + "\" has plain feature rows; use mlp");
  }
  CheckCnn(config);
  const int64_t hidden = config.hidden.empty() ? 128 : config.hidden[0];
  return std::make_shared<Cnn>(data.image_shape, config.channels, hidden, Outputs(data),
                               config.bias);
}

[[maybe_unused]] const bool registered_logreg = RegisterModel(
    {"logreg", "Linear(F -> out): logistic regression, or linear regression on 1 output",
     MakeLogReg});
[[maybe_unused]] const bool registered_mlp = RegisterModel(
    {"mlp", "Linear + ReLU layers of widths model.hidden, then Linear(-> out)", MakeMlp});
[[maybe_unused]] const bool registered_cnn = RegisterModel(
    {"cnn", "two 5x5 conv + pool blocks (model.channels), a dense layer (model.hidden[0])", MakeCnn,
     CheckCnn});

}  // namespace

int64_t Model::ParameterCount() {
  int64_t n = 0;
  for (const auto& p : parameters()) n += p.numel();
  return n;
}

}  // namespace batchlab::runner
