// LAMB step (see lamb.h for the update rule and its source).
#include "runner/optim/lamb.h"

#include <cmath>
#include <string>
#include <utility>

#include <torch/torch.h>

#include "runner/optim/optimizer_closure.h"
#include "runner/optim/optimizer_state_key.h"

namespace batchlab::runner {

Lamb::Lamb(std::vector<torch::Tensor> params, const LambOptions& defaults)
    : torch::optim::Optimizer({torch::optim::OptimizerParamGroup(std::move(params))},
                              std::make_unique<LambOptions>(defaults)) {}

torch::Tensor Lamb::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss = EvaluateClosure(closure);
  for (auto& group : param_groups_) {
    const auto& o = static_cast<const LambOptions&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      const torch::Tensor& g = p.grad();
      auto& slot = state_[OptimizerStateKey(p)];
      if (!slot) {
        auto fresh = std::make_unique<LambParamState>();
        fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        slot = std::move(fresh);
      }
      auto& st = static_cast<LambParamState&>(*slot);
      st.step(st.step() + 1);
      const double t = static_cast<double>(st.step());

      // Adam moments.
      torch::Tensor& m = st.exp_avg();
      torch::Tensor& v = st.exp_avg_sq();
      m.mul_(o.beta1()).add_(g, 1.0 - o.beta1());
      v.mul_(o.beta2()).addcmul_(g, g, 1.0 - o.beta2());
      const double bc1 = 1.0 - std::pow(o.beta1(), t);
      const double bc2 = 1.0 - std::pow(o.beta2(), t);

      // r = m̂ / (sqrt(v̂) + eps) + λ·w
      torch::Tensor r = (m / bc1).div_((v / bc2).sqrt_().add_(o.eps()));
      const bool adapt = !(o.exclude_bias_and_norm() && p.dim() <= 1);
      if (adapt && o.weight_decay() != 0) r.add_(p, o.weight_decay());

      double ratio = 1.0;
      if (adapt) {
        const double w_norm = p.norm().item<double>();
        const double r_norm = r.norm().item<double>();
        if (w_norm > 0 && r_norm > 0) ratio = w_norm / r_norm;
      }
      st.trust_ratio(ratio);
      p.add_(r, -o.lr() * ratio);
    }
  }
  return loss;
}

const LambParamState* Lamb::StateOf(const torch::Tensor& param) const {
  auto it = state_.find(OptimizerStateKey(param));
  return it == state_.end() ? nullptr : static_cast<const LambParamState*>(it->second.get());
}

}  // namespace batchlab::runner
