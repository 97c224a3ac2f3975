// The byte-level transformer language model (see transformer.h), registered as "transformer".
#include "runner/models/transformer.h"

#include <cmath>
#include <limits>
#include <string>

#include "runner/models/model_registry.h"
#include "runner/config/runner_error.h"

namespace batchlab::runner {

namespace nn = torch::nn;

TransformerBlock::TransformerBlock(const TransformerShape& s) : heads_(s.heads) {
  const int64_t w = s.width;
  ln1_ = register_module("ln1", nn::LayerNorm(nn::LayerNormOptions({w})));
  qkv_ = register_module("qkv", nn::Linear(nn::LinearOptions(w, 3 * w).bias(s.bias)));
  proj_ = register_module("proj", nn::Linear(nn::LinearOptions(w, w).bias(s.bias)));
  ln2_ = register_module("ln2", nn::LayerNorm(nn::LayerNormOptions({w})));
  fc_ = register_module("fc", nn::Linear(nn::LinearOptions(w, 4 * w).bias(s.bias)));
  out_ = register_module("out", nn::Linear(nn::LinearOptions(4 * w, w).bias(s.bias)));
  torch::NoGradGuard no_grad;
  const double residual_std = 0.02 / std::sqrt(2.0 * static_cast<double>(s.layers));
  for (nn::Linear* l : {&qkv_, &proj_, &fc_, &out_}) {
    const bool residual = l == &proj_ || l == &out_;
    (*l)->weight.normal_(0.0, residual ? residual_std : 0.02);
    if (s.bias) (*l)->bias.zero_();
  }
}

torch::Tensor TransformerBlock::forward(torch::Tensor h, const torch::Tensor& causal_mask) {
  const int64_t b = h.size(0), t = h.size(1), w = h.size(2), d = w / heads_;
  // Attention: q, k, v [B, heads, T, d].
  torch::Tensor qkv = qkv_->forward(ln1_->forward(h)).view({b, t, 3, heads_, d});
  qkv = qkv.permute({2, 0, 3, 1, 4});
  torch::Tensor q = qkv[0], k = qkv[1], v = qkv[2];
  torch::Tensor scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(d));
  scores = scores.masked_fill(causal_mask.narrow(0, 0, t).narrow(1, 0, t),
                              -std::numeric_limits<float>::infinity());
  torch::Tensor y = torch::matmul(torch::softmax(scores, -1), v);  // [B, heads, T, d]
  y = y.transpose(1, 2).reshape({b, t, w});
  h = h + proj_->forward(y);
  return h + out_->forward(torch::gelu(fc_->forward(ln2_->forward(h))));
}

Transformer::Transformer(const TransformerShape& shape) : shape_(shape) {
  const TransformerShape& s = shape_;
  tok_ = register_module("tok", nn::Embedding(s.vocab, s.width));
  pos_ = register_module("pos", nn::Embedding(s.context, s.width));
  for (int64_t i = 0; i < s.layers; ++i) {
    blocks_.push_back(
        register_module("block" + std::to_string(i), std::make_shared<TransformerBlock>(s)));
  }
  ln_f_ = register_module("ln_f", nn::LayerNorm(nn::LayerNormOptions({s.width})));
  torch::NoGradGuard no_grad;
  tok_->weight.normal_(0.0, 0.02);
  pos_->weight.normal_(0.0, 0.02);
  causal_mask_ = torch::ones({s.context, s.context}, torch::kBool).triu(1);
}

torch::Tensor Transformer::forward(torch::Tensor x) {
  if (x.dim() == 1) x = x.unsqueeze(0);
  const torch::Tensor tokens = x.to(torch::kInt64);
  const int64_t t = tokens.size(1);
  // Positions and the mask on the tokens' device (the mask is no registered buffer, so it does
  // not follow Module::to; it moves here once).
  if (causal_mask_.device() != tokens.device()) causal_mask_ = causal_mask_.to(tokens.device());
  torch::Tensor h = tok_->forward(tokens) + pos_->forward(torch::arange(t, tokens.options()));
  for (auto& block : blocks_) h = block->forward(h, causal_mask_);
  h = ln_f_->forward(h);
  return torch::matmul(h, tok_->weight.t());  // tied output: [B, T, vocab]
}

double Transformer::TrainingFlopsPerToken() {
  const auto& s = shape_;
  return 6.0 * static_cast<double>(ParameterCount()) +
         6.0 * static_cast<double>(s.layers * s.context * s.width);
}

namespace {

const std::vector<OwnField> kFields = {
    {"layers", OwnField::Kind::kInt, 1, "transformer blocks (e.g. 2)"},
    {"width", OwnField::Kind::kInt, 1, "embedding width (e.g. 128)"},
    {"heads", OwnField::Kind::kInt, 1, "attention heads, dividing width (e.g. 4)"},
    {"context", OwnField::Kind::kInt, 1,
     "tokens per sample, the position embedding's length (e.g. 64)"}};

TransformerShape ShapeOf(const ModelConfig& config) {
  TransformerShape s;
  s.layers = config.own.at("layers").get<int64_t>();
  s.width = config.own.at("width").get<int64_t>();
  s.heads = config.own.at("heads").get<int64_t>();
  s.context = config.own.at("context").get<int64_t>();
  s.bias = config.bias;
  return s;
}

void CheckTransformer(const ModelConfig& config) {
  const TransformerShape s = ShapeOf(config);
  if (s.width % s.heads != 0) {
    throw BadConfig("model.heads: " + std::to_string(s.heads) + " does not divide model.width " +
                    std::to_string(s.width) + "; each head has width / heads dimensions");
  }
}

std::shared_ptr<Model> MakeTransformer(const ModelConfig& config, const Dataset& data) {
  CheckTransformer(config);
  TransformerShape s = ShapeOf(config);
  if (data.context <= 0 || data.classes <= 0) {
    throw BadConfig("model.name: \"transformer\" needs token data (data.name \"text\"); data \"" +
                    data.name + "\" has plain rows");
  }
  if (data.context != s.context) {
    throw BadConfig("model.context: " + std::to_string(s.context) +
                    ", but the data was cut into samples of " + std::to_string(data.context) +
                    " tokens");
  }
  s.vocab = data.classes;
  return std::make_shared<Transformer>(s);
}

[[maybe_unused]] const bool registered_transformer = RegisterModel(
    {"transformer",
     "decoder-only byte-level language model: model.layers pre-LayerNorm blocks of model.width, "
     "model.heads causal attention heads, model.context tokens; output tied to the embedding",
     MakeTransformer, CheckTransformer, kFields});

}  // namespace

}  // namespace batchlab::runner
