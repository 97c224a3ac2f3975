// The trainer's compute (see trainer.h): forward and backward of the local batch, in
// micro-batches, into ONE flat gradient buffer (or the exchange's buckets); the loss of a model's
// output; the gradient norms the noise measurement reads.
#include <vector>

#include "runner/comm/gradient_buckets.h"
#include "runner/train/trainer.h"

namespace batchlab::runner {
namespace {

namespace F = torch::nn::functional;

}  // namespace

std::vector<torch::Tensor> Trainer::GradientTensors() const {
  if (grads_.defined()) return {grads_};
  std::vector<torch::Tensor> grads;
  grads.reserve(params_.size());
  for (const auto& p : params_) grads.push_back(p.grad());
  return grads;
}

void Trainer::BindGradientsToFlatBuffer() {
  // Autograd accumulates into an existing .grad in place, so after backward the gradients sit
  // in grads_ already flat: norms and micro-batch differences need no gathering.
  grads_ = torch::zeros({param_count_}, torch::TensorOptions().device(device_));
  int64_t offset = 0;
  for (auto& p : params_) {
    p.mutable_grad() =
        grads_.narrow(0, offset, p.numel()).as_strided(p.sizes(), GradientStrides(p));
    offset += p.numel();
  }
}

void Trainer::ZeroGradients() {
  if (grads_.defined()) {
    grads_.zero_();
    return;
  }
  for (auto& p : params_) p.mutable_grad().zero_();  // in place: the bucket views stay
}

double Trainer::GradSquaredNorm() {
  if (grads_.defined()) return grads_.dot(grads_).item<double>();
  double sum = 0;
  for (auto& p : params_) {
    const torch::Tensor g = p.grad().reshape({-1});
    sum += g.dot(g).item<double>();
  }
  return sum;
}

torch::Tensor Trainer::FlatParameters() const {
  std::vector<torch::Tensor> parts;
  parts.reserve(params_.size());
  for (const auto& p : params_) parts.push_back(p.detach().reshape({-1}));
  return torch::cat(parts).to(torch::kCPU).contiguous();
}

void Trainer::Allreduce(torch::Tensor& tensor, ReduceOp op) {
  comm_->Allreduce(tensor, op)->Wait(std::chrono::seconds(config_.comm.timeout_seconds));
}

torch::Tensor Trainer::Loss(const torch::Tensor& output, const torch::Tensor& target) {
  if (data_.classes > 0 && output.dim() > 2) {  // a language model: the mean over all tokens
    return F::cross_entropy(output.reshape({-1, output.size(-1)}), target.reshape({-1}));
  }
  if (data_.classes > 0) return F::cross_entropy(output, target);
  return 0.5 * F::mse_loss(output, target);
}

double Trainer::ComputeGradients(bool measure_micro) {
  const int64_t local = local_batch_;
  int64_t m = config_.accumulation;
  if (measure_micro && m == 1 && local >= 2 && local % 2 == 0) m = 2;  // two half-batches
  const int64_t mb = local / m;
  const bool measured = measure_micro && m > 1;
  const bool autocast = precision_ != Precision::kFp32;
  const double loss_scale = scaler_ ? scaler_->scale() : 1.0;  // fp16: backward of S * loss

  ZeroGradients();
  if (measured) prev_grad_.zero_();
  // Summed where the loss is, in double as the host did it: no host read per micro-batch.
  torch::Tensor loss_sum = torch::zeros({}, torch::TensorOptions(torch::kFloat64).device(device_));
  double sq_sum = 0;
  for (int64_t i = 0; i < m; ++i) {
    torch::Tensor xb = m == 1 ? batch_x_ : batch_x_.narrow(0, i * mb, mb);
    torch::Tensor yb = m == 1 ? batch_y_ : batch_y_.narrow(0, i * mb, mb);
    torch::Tensor loss;
    {
      AutocastGuard guard(precision_, device_.is_cuda());
      torch::Tensor out = model_->forward(xb);
      loss = Loss(autocast ? out.to(torch::kFloat32) : out, yb);
    }
    // The sum of micro-steps is the mean, and (with buckets) the sum over ranks too.
    const double scale = grad_scale_ / static_cast<double>(m);
    if (scaler_) {
      (loss * (scale * loss_scale)).backward();
    } else if (scale == 1.0) {
      loss.backward();
    } else {
      (loss * scale).backward();
    }
    loss_sum.add_(loss.detach().to(torch::kFloat64));
    if (measured) {
      // This micro-batch's gradient is m * (grads after - grads before).
      torch::sub_out(scratch_, grads_, prev_grad_);
      sq_sum += scratch_.dot(scratch_).item<double>() * static_cast<double>(m * m);
      prev_grad_.copy_(grads_);
    }
  }
  gns_b_small_ = measured ? mb : 0;
  // Of the unscaled gradients (fp16: the micro-batch gradients carry S).
  gns_sq_small_ = measured ? sq_sum / static_cast<double>(m) / (loss_scale * loss_scale) : 0;
  return loss_sum.item<double>() / static_cast<double>(m);
}

}  // namespace batchlab::runner
