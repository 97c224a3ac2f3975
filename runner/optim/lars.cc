// LARS step (see lars.h for the update rule and its source).
#include "runner/optim/lars.h"

#include <cmath>
#include <string>
#include <utility>

#include <torch/torch.h>

#include "runner/optim/optimizer_closure.h"
#include "runner/optim/optimizer_state_key.h"

namespace batchlab::runner {

Lars::Lars(std::vector<torch::Tensor> params, const LarsOptions& defaults)
    : torch::optim::Optimizer({torch::optim::OptimizerParamGroup(std::move(params))},
                              std::make_unique<LarsOptions>(defaults)) {}

torch::Tensor Lars::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss = EvaluateClosure(closure);
  for (auto& group : param_groups_) {
    const auto& o = static_cast<const LarsOptions&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      const torch::Tensor& g = p.grad();
      auto& slot = state_[OptimizerStateKey(p)];
      if (!slot) slot = std::make_unique<LarsParamState>();
      auto& st = static_cast<LarsParamState&>(*slot);

      const bool adapt = !(o.exclude_bias_and_norm() && p.dim() <= 1);
      const double decay = adapt ? o.weight_decay() : 0.0;
      double ratio = 1.0;
      if (adapt) {
        const double w_norm = p.norm().item<double>();
        const double g_norm = g.norm().item<double>();
        if (w_norm > 0 && g_norm > 0) {
          ratio = o.trust_coefficient() * w_norm / (g_norm + decay * w_norm + o.eps());
        }
      }
      st.trust_ratio(ratio);

      // d = g + β·w ; v = m·v + γ·λ·d ; w -= v
      torch::Tensor d = decay != 0 ? g.add(p, decay) : g;
      const double scale = o.lr() * ratio;
      if (!st.momentum_buffer().defined()) {
        st.momentum_buffer(torch::zeros_like(p, torch::MemoryFormat::Preserve));
      }
      torch::Tensor& v = st.momentum_buffer();
      v.mul_(o.momentum()).add_(d, scale);
      p.sub_(v);
    }
  }
  return loss;
}

const LarsParamState* Lars::StateOf(const torch::Tensor& param) const {
  auto it = state_.find(OptimizerStateKey(param));
  return it == state_.end() ? nullptr : static_cast<const LarsParamState*>(it->second.get());
}

}  // namespace batchlab::runner
