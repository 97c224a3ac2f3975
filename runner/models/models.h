// The models a study trains, sized by the config and the data:
//
//   logreg   Linear(F -> out)                                   (linear regression when out = 1)
//   mlp      Linear(F -> h1) ReLU ... Linear(hk -> out)         model.hidden = [h1, ..., hk]
//   cnn      [C,H,W] -> Conv5x5(c1) ReLU MaxPool2 -> Conv5x5(c2) ReLU MaxPool2 -> Linear(h) ReLU
//            -> Linear(out)                                     model.channels = [c1, c2]
//
// out = the number of classes (logits), or 1 for regression. Initialization is LibTorch's
// default (the same as PyTorch's), drawn from the global generator: seed it first. These three
// register like any other model (model_registry.h: adding a model is one file); model.name picks
// a registered one (`batchlab-runner --list`).
//
//   torch::manual_seed(config.seed);
//   std::shared_ptr<Model> model = MakeModel(config.model, data);
//   torch::Tensor logits = model->forward(batch_x);   // batch_x: [B, F] -> [B, out]
#ifndef BATCHLAB_RUNNER_MODELS_MODELS_H_
#define BATCHLAB_RUNNER_MODELS_MODELS_H_

#include <memory>

#include <torch/torch.h>

#include "runner/data/dataset.h"
#include "runner/config/run_config.h"

namespace batchlab::runner {

class Model : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(torch::Tensor x) = 0;  // [B, F] -> [B, out]
  int64_t ParameterCount();
  // A language model (transformer.h): tokens per sample, and its training FLOPs per token
  // (forward + backward), for the start line's tokens_per_step and flops_per_step. 0: not one.
  virtual int64_t TokensPerSample() const { return 0; }
  virtual double TrainingFlopsPerToken() { return 0; }
};

// The registered model named config.name (model_registry.cc). Throws BadConfig naming model.* for
// an unknown name or a model that does not fit the data (e.g. cnn on CSV rows).
std::shared_ptr<Model> MakeModel(const ModelConfig& config, const Dataset& data);

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_MODELS_MODELS_H_
