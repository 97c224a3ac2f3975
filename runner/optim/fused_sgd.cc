// FusedSgd::step (see fused_sgd.h for the rule).
#include "runner/optim/fused_sgd.h"

#include <cstdint>
#include <memory>

#include <torch/torch.h>

#include "runner/optim/optimizer_closure.h"
#include "runner/optim/optimizer_state_key.h"

namespace batchlab::runner {
namespace {

struct Coefficients {
  float lr, momentum, keep, decay;  // keep = 1 - dampening
};

// One pass over n elements. The flags are template arguments so that each loop is branch-free
// and vectorizes.
template <bool kDecay, bool kMomentum, bool kFirst, bool kNesterov>
void Update(int64_t n, float* __restrict w, const float* __restrict g, float* __restrict b,
            Coefficients c) {
  for (int64_t i = 0; i < n; ++i) {
    float d = g[i];
    if constexpr (kDecay) d = d + c.decay * w[i];
    if constexpr (kMomentum) {
      const float v = kFirst ? d : c.momentum * b[i] + c.keep * d;
      b[i] = v;
      d = kNesterov ? d + c.momentum * v : v;
    }
    w[i] = w[i] + -c.lr * d;
  }
}

template <bool kDecay>
void UpdateWithDecay(bool momentum, bool first, bool nesterov, int64_t n, float* w, const float* g,
                     float* b, Coefficients c) {
  if (!momentum) return Update<kDecay, false, false, false>(n, w, g, b, c);
  if (first) {
    return nesterov ? Update<kDecay, true, true, true>(n, w, g, b, c)
                    : Update<kDecay, true, true, false>(n, w, g, b, c);
  }
  return nesterov ? Update<kDecay, true, false, true>(n, w, g, b, c)
                  : Update<kDecay, true, false, false>(n, w, g, b, c);
}

// One pass over raw memory is right when the tensors are float32 and cover their elements densely
// in the same order (contiguous or channels-last alike).
bool SameDenseLayout(const torch::Tensor& p, const torch::Tensor& t) {
  return p.scalar_type() == torch::kFloat32 && t.scalar_type() == torch::kFloat32 &&
         p.device().is_cpu() && t.device().is_cpu() && p.is_non_overlapping_and_dense() &&
         p.sizes() == t.sizes() && p.strides() == t.strides();
}

}  // namespace

torch::Tensor FusedSgd::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss = EvaluateClosure(closure);
  for (auto& group : param_groups_) {
    const auto& o = static_cast<const torch::optim::SGDOptions&>(group.options());
    const bool momentum = o.momentum() != 0;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      const torch::Tensor& g = p.grad();
      torch::optim::SGDParamState* st = nullptr;
      bool first = false;
      if (momentum) {
        auto& slot = state_[OptimizerStateKey(p)];
        first = !slot;
        if (first) {
          slot = std::make_unique<torch::optim::SGDParamState>();
          static_cast<torch::optim::SGDParamState&>(*slot).momentum_buffer(
              torch::empty_like(g, torch::MemoryFormat::Preserve));
        }
        st = static_cast<torch::optim::SGDParamState*>(slot.get());
      }
      const torch::Tensor buf = st != nullptr ? st->momentum_buffer() : torch::Tensor();
      if (SameDenseLayout(p, g) && (!buf.defined() || SameDenseLayout(p, buf))) {
        const Coefficients c{static_cast<float>(o.lr()), static_cast<float>(o.momentum()),
                             static_cast<float>(1 - o.dampening()),
                             static_cast<float>(o.weight_decay())};
        float* b = buf.defined() ? buf.data_ptr<float>() : nullptr;
        auto* update = o.weight_decay() != 0 ? &UpdateWithDecay<true> : &UpdateWithDecay<false>;
        update(momentum, first, o.nesterov(), p.numel(), p.data_ptr<float>(), g.data_ptr<float>(),
               b, c);
        continue;
      }
      // The same rule as tensor operations (torch::optim::SGD::step).
      torch::Tensor d = o.weight_decay() != 0 ? g.add(p, o.weight_decay()) : g;
      if (momentum) {
        torch::Tensor b = st->momentum_buffer();
        if (first) {
          b.copy_(d);
        } else {
          b.mul_(o.momentum()).add_(d, 1 - o.dampening());
        }
        d = o.nesterov() ? d.add(b, o.momentum()) : b;
      }
      p.add_(d, -o.lr());
    }
  }
  return loss;
}

}  // namespace batchlab::runner
