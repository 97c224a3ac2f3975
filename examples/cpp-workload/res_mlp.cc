// res_mlp: a residual MLP for batchlab-runner, added in this one file (docs/cpp-workload.md).
//
//   [B, F] -> Linear(F -> w) -> blocks x (x + Linear(w -> w)(ReLU(Linear(w -> w)(x)))) -> ReLU
//          -> Linear(w -> out)                      w = model.hidden[0], blocks = model.blocks
//
// model.blocks is the model's own field (runner/config/own_fields.h): it has no default, so a spec states
// it and the run id covers it. The registration is the last line of this file.
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "runner/models/model_registry.h"
#include "runner/config/runner_error.h"

namespace batchlab::runner {
namespace {

namespace nn = torch::nn;

class ResMlp : public Model {
 public:
  ResMlp(int64_t in, int64_t width, int64_t blocks, int64_t out, bool bias)
      : input_(register_module("input", nn::Linear(nn::LinearOptions(in, width).bias(bias)))),
        output_(register_module("output", nn::Linear(nn::LinearOptions(width, out).bias(bias)))) {
    for (int64_t i = 0; i < blocks; ++i) {
      const std::string n = std::to_string(i);
      inner_.push_back(register_module("block" + n + "_a",
                                       nn::Linear(nn::LinearOptions(width, width).bias(bias))));
      outer_.push_back(register_module("block" + n + "_b",
                                       nn::Linear(nn::LinearOptions(width, width).bias(bias))));
    }
  }

  torch::Tensor forward(torch::Tensor x) override {
    x = input_->forward(x);  // [B, w]
    for (size_t i = 0; i < inner_.size(); ++i) {
      x = x + outer_[i]->forward(torch::relu(inner_[i]->forward(x)));  // [B, w]
    }
    return output_->forward(torch::relu(x));  // [B, out]
  }

 private:
  nn::Linear input_, output_;
  std::vector<nn::Linear> inner_, outer_;
};

// Config-only checks: run when the config is parsed, so `batchlab sweep run` refuses a bad spec
// (exit 2, naming the field) before it launches anything.
void CheckResMlp(const ModelConfig& config) {
  if (config.hidden.size() != 1) {
    throw BadConfig("model.hidden: res_mlp has one width for all its blocks; give one, e.g. [128]");
  }
}

std::shared_ptr<Model> MakeResMlp(const ModelConfig& config, const Dataset& data) {
  const int64_t out = data.classes > 0 ? data.classes : 1;  // logits, or 1 for regression
  const int64_t blocks = config.own.at("blocks").get<int64_t>();
  return std::make_shared<ResMlp>(data.features(), config.hidden[0], blocks, out, config.bias);
}

// The one registration line (runner/models/model_registry.h).
[[maybe_unused]] const bool registered =
    RegisterModel({"res_mlp",
                   "residual MLP: model.blocks residual blocks of width model.hidden[0]",
                   MakeResMlp,
                   CheckResMlp,
                   {{"blocks", OwnField::Kind::kInt, 1, "residual blocks of two Linear layers"}}});

}  // namespace
}  // namespace batchlab::runner
