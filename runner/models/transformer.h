// model.name "transformer": a decoder-only byte-level language model (GPT-2 style), for the text
// dataset (data/text_file.h).
//
//   tokens [B, T] (T <= context) -> token embedding (vocab x width) + learned position embedding
//   (context x width) -> `layers` pre-LayerNorm blocks:
//       h = h + Proj(CausalSelfAttention(LN1(h)))      `heads` heads of width / heads
//       h = h + Out(GELU(Fc(LN2(h))))                  Fc: width -> 4 width, Out: 4 width -> width
//   -> final LayerNorm -> logits = h . token_embedding^T (the output is tied to the input
//   embedding) [B, T, vocab]
//
// Own fields (all required, own_fields.h): model.layers, model.width, model.heads, model.context
// (a small model: 2, 128, 4, 64). heads must divide width (BadConfig naming model.heads). The
// vocabulary is the data's classes (256 bytes). model.bias: biases of the Linear layers
// (LayerNorms always have theirs). Initialization (from the global generator): embeddings and
// Linear weights N(0, 0.02), the residual projections (Proj, Out) N(0, 0.02 / sqrt(2 layers)),
// biases 0, LayerNorm weight 1 and bias 0. The loss is the trainer's cross-entropy, the mean over
// all B x T tokens (nats).
//
// Parameters P = V W + T W + L (12 W^2 + 13 W) + 2 W with biases (V vocab, T context, W width,
// L layers). Training FLOPs per token (Kaplan et al. 2020, forward + backward = 3 x forward):
//   6 P + 6 L T W   (the second term: attention scores and their weighted sum)
// so a step of B sequences costs flops_per_step = (6 P + 6 L T W) x B T.
#ifndef BATCHLAB_RUNNER_MODELS_TRANSFORMER_H_
#define BATCHLAB_RUNNER_MODELS_TRANSFORMER_H_

#include <memory>
#include <vector>

#include <torch/torch.h>

#include "runner/models/models.h"

namespace batchlab::runner {

struct TransformerShape {
  int64_t vocab = 256, layers = 2, width = 128, heads = 4, context = 64;
  bool bias = true;
};

class TransformerBlock : public torch::nn::Module {
 public:
  TransformerBlock(const TransformerShape& s);
  torch::Tensor forward(torch::Tensor h, const torch::Tensor& causal_mask);

 private:
  int64_t heads_;
  torch::nn::LayerNorm ln1_{nullptr}, ln2_{nullptr};
  torch::nn::Linear qkv_{nullptr}, proj_{nullptr}, fc_{nullptr}, out_{nullptr};
};

class Transformer : public Model {
 public:
  explicit Transformer(const TransformerShape& shape);
  // x: [B, T] token ids (any dtype holding whole numbers; the text data's are float32) ->
  // logits [B, T, vocab].
  torch::Tensor forward(torch::Tensor x) override;
  int64_t TokensPerSample() const override { return shape_.context; }
  double TrainingFlopsPerToken() override;
  const TransformerShape& shape() const { return shape_; }

 private:
  TransformerShape shape_;
  torch::nn::Embedding tok_{nullptr}, pos_{nullptr};
  std::vector<std::shared_ptr<TransformerBlock>> blocks_;
  torch::nn::LayerNorm ln_f_{nullptr};
  torch::Tensor causal_mask_;  // [context, context] bool, true above the diagonal (masked)
};

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_MODELS_TRANSFORMER_H_
