// Multi-tensor AdamW on a CUDA device (see foreach_adamw.h).
#include "runner/optim/foreach_adamw.h"

#include <cmath>
#include <memory>

#include "runner/optim/optimizer_state_key.h"

namespace batchlab::runner {

torch::Tensor ForeachAdamW::step(LossClosure closure) {
  for (auto& group : param_groups_) {
    const auto& o = static_cast<const torch::optim::AdamWOptions&>(group.options());
    bool multi = !o.amsgrad() && !group.params().empty();
    for (const auto& p : group.params()) {
      multi = multi && p.is_cuda() && p.grad().defined() && !p.grad().is_sparse();
    }
    if (!multi) return torch::optim::AdamW::step(closure);
  }
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure != nullptr) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : param_groups_) {
    const auto& o = static_cast<const torch::optim::AdamWOptions&>(group.options());
    std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs;
    int64_t step = 0;
    for (const auto& p : group.params()) {
      auto& slot = state_[OptimizerStateKey(p)];
      if (!slot) {  // as AdamW::step initializes it
        auto s = std::make_unique<torch::optim::AdamWParamState>();
        s->step(0);
        s->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        s->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        slot = std::move(s);
      }
      auto& s = static_cast<torch::optim::AdamWParamState&>(*slot);
      s.step(s.step() + 1);
      step = s.step();  // the same for all: every parameter is stepped every time
      params.push_back(p);
      grads.push_back(p.grad());
      exp_avgs.push_back(s.exp_avg());
      exp_avg_sqs.push_back(s.exp_avg_sq());
    }
    const auto [beta1, beta2] = o.betas();
    const double bias1 = 1 - std::pow(beta1, static_cast<double>(step));
    const double bias2 = 1 - std::pow(beta2, static_cast<double>(step));
    if (o.weight_decay() != 0) at::_foreach_mul_(params, 1 - o.lr() * o.weight_decay());
    at::_foreach_mul_(exp_avgs, beta1);
    at::_foreach_add_(exp_avgs, grads, 1 - beta1);
    at::_foreach_mul_(exp_avg_sqs, beta2);
    at::_foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2);
    std::vector<torch::Tensor> denom = at::_foreach_sqrt(exp_avg_sqs);
    at::_foreach_div_(denom, std::sqrt(bias2));
    at::_foreach_add_(denom, o.eps());
    at::_foreach_addcdiv_(params, exp_avgs, denom, -o.lr() / bias1);
  }
  return loss;
}

}  // namespace batchlab::runner
