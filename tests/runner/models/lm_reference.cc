// Writes a transformer's weights, one fixed batch, and the runner's logits, loss and gradients on
// it, for lm_reference_check.py to recompute with PyTorch (nn.MultiheadAttention, nn.LayerNorm,
// ...) and compare:
//
//   runner_lm_reference DIR   ->  DIR/manifest.json (shape, parameter names and shapes, loss)
//                                 DIR/{params,grads,logits}.bin float32, DIR/{x,y}.bin int64
//
// The LayerNorm parameters and biases are perturbed away from their initial 1 and 0 so that the
// comparison covers them.
#include <fstream>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "runner/data/text_file.h"
#include "runner/models/models.h"
#include "runner/config/run_config.h"

namespace {

using batchlab::runner::Dataset;
using batchlab::runner::MakeModel;
using batchlab::runner::MakeTextDataset;
using batchlab::runner::ModelConfig;

void WriteRaw(const std::string& path, const torch::Tensor& t) {
  const torch::Tensor c = t.contiguous();
  std::ofstream(path, std::ios::binary)
      .write(static_cast<const char*>(c.data_ptr()),
             static_cast<std::streamsize>(c.numel() * c.element_size()));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: runner_lm_reference DIR\n";
    return 2;
  }
  const std::string dir = argv[1];
  const int64_t layers = 2, width = 48, heads = 4, context = 24, batch = 3;
  std::string text;
  for (int i = 0; i < 400; ++i) {
    text += "def f" + std::to_string(i * 37 % 101) + "(x):\n    return x * " +
            std::to_string(i % 7) + " + 'caf\xc3\xa9'\n";
  }
  const Dataset data = MakeTextDataset(text, context);

  ModelConfig mc;
  mc.name = "transformer";
  mc.bias = true;
  mc.own = {{"layers", layers}, {"width", width}, {"heads", heads}, {"context", context}};
  torch::manual_seed(11);
  const auto model = MakeModel(mc, data);
  {
    torch::NoGradGuard no_grad;
    for (auto& kv : model->named_parameters()) {
      const std::string& name = kv.key();
      if (name.find("ln") != std::string::npos && name.find("weight") != std::string::npos) {
        kv.value().add_(0.1 * torch::randn(kv.value().sizes()));
      } else if (name.find("bias") != std::string::npos) {
        kv.value().normal_(0.0, 0.05);
      }
    }
  }
  const torch::Tensor x = data.train_x.narrow(0, 7, batch).contiguous();
  const torch::Tensor y = data.train_y.narrow(0, 7, batch).contiguous();
  const torch::Tensor logits = model->forward(x);
  const torch::Tensor loss = torch::nn::functional::cross_entropy(
      logits.reshape({-1, logits.size(-1)}), y.reshape({-1}));  // the trainer's Loss
  loss.backward();

  nlohmann::ordered_json manifest = {{"vocab", data.classes},
                                     {"layers", layers},
                                     {"width", width},
                                     {"heads", heads},
                                     {"context", context},
                                     {"bias", true},
                                     {"batch", batch},
                                     {"loss", loss.item<double>()},
                                     {"params", nlohmann::ordered_json::array()}};
  std::vector<torch::Tensor> params, grads;
  for (const auto& kv : model->named_parameters()) {
    manifest["params"].push_back({{"name", kv.key()}, {"shape", kv.value().sizes().vec()}});
    params.push_back(kv.value().detach().reshape({-1}));
    grads.push_back(kv.value().grad().reshape({-1}));
  }
  std::ofstream(dir + "/manifest.json") << manifest.dump(1) << "\n";
  WriteRaw(dir + "/params.bin", torch::cat(params));
  WriteRaw(dir + "/grads.bin", torch::cat(grads));
  WriteRaw(dir + "/logits.bin", logits.detach());
  WriteRaw(dir + "/x.bin", x.to(torch::kInt64));
  WriteRaw(dir + "/y.bin", y);
  std::cout << "wrote " << dir << ": loss " << loss.item<double>() << ", "
            << model->ParameterCount() << " parameters\n";
  return 0;
}
