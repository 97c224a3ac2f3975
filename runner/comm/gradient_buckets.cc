// GradientBuckets (see gradient_buckets.h).
#include "runner/comm/gradient_buckets.h"

#include <chrono>
#include <memory>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "base/elapsed.h"
#include "runner/config/runner_error.h"

namespace batchlab::runner {

std::vector<int64_t> GradientStrides(const torch::Tensor& param) {
  if (param.is_non_overlapping_and_dense()) return param.strides().vec();
  const auto sizes = param.sizes();
  std::vector<int64_t> strides(sizes.size(), 1);
  for (size_t d = sizes.size(); d-- > 1;) strides[d - 1] = strides[d] * sizes[d];
  return strides;
}

GradientBuckets::GradientBuckets(std::vector<torch::Tensor> params, double bucket_mb)
    : params_(std::move(params)) {
  if (!(bucket_mb > 0)) {
    throw BadConfig("comm.bucket_mb: must be a positive number of megabytes (e.g. 25)");
  }
  const double cap_bytes = bucket_mb * 1024.0 * 1024.0;
  torch::NoGradGuard no_grad;
  // Assign parameters to buckets in order: a new bucket when the dtype changes or the next
  // parameter would overflow a non-empty bucket.
  std::vector<std::pair<torch::ScalarType, std::vector<Member>>> plan;
  double bytes = 0;
  int64_t numel = 0;
  for (size_t i = 0; i < params_.size(); ++i) {
    const torch::Tensor& p = params_[i];
    const double p_bytes = static_cast<double>(p.numel()) * static_cast<double>(p.element_size());
    const bool fits =
        !plan.empty() && plan.back().first == p.scalar_type() && bytes + p_bytes <= cap_bytes;
    if (!fits) {
      plan.emplace_back(p.scalar_type(), std::vector<Member>());
      bytes = 0;
      numel = 0;
    }
    plan.back().second.push_back(Member{i, numel, p.numel(), GradientStrides(p)});
    bytes += p_bytes;
    numel += p.numel();
  }
  for (auto& [dtype, members] : plan) {
    const int64_t total = members.back().offset + members.back().numel;
    Bucket b;
    // On the parameters' device: a CUDA rank's buckets are device buffers (nccl reduces them
    // in place).
    const torch::Device device = params_[members.front().param].device();
    b.flat = torch::zeros({total}, torch::TensorOptions().dtype(dtype).device(device));
    b.members = std::move(members);
    // Make each gradient a view into the bucket, keeping any values it already had.
    for (const Member& m : b.members) {
      torch::Tensor& p = params_[m.param];
      torch::Tensor view = Slice(b, m);
      if (p.grad().defined()) view.copy_(p.grad());
      p.mutable_grad() = view;
    }
    buckets_.push_back(std::move(b));
  }
}

// A tensor over the bucket's storage shaped and laid out like the parameter (a channels-last
// weight gets a channels-last gradient: autograd's layout contract, which keeps accumulation a
// plain pass). Made with set_ rather than narrow().view(), so autograd does not treat it as a
// view: Optimizer::zero_grad() calls detach_() on gradients, which autograd refuses on views.
torch::Tensor GradientBuckets::Slice(const Bucket& b, const Member& m) const {
  torch::Tensor t = torch::empty({0}, b.flat.options());
  t.set_(b.flat.storage(), b.flat.storage_offset() + m.offset, params_[m.param].sizes(), m.strides);
  return t;
}

bool GradientBuckets::IsView(const Bucket& b, const Member& m) const {
  const torch::Tensor& g = params_[m.param].grad();
  if (!g.defined() || g.strides() != c10::IntArrayRef(m.strides)) return false;
  const auto* want = static_cast<const char*>(b.flat.data_ptr()) + m.offset * b.flat.element_size();
  return g.data_ptr() == want && g.numel() == m.numel;
}

void GradientBuckets::Pack(Bucket& b) {
  for (const Member& m : b.members) {
    if (IsView(b, m)) continue;
    torch::Tensor view = Slice(b, m);
    const torch::Tensor& g = params_[m.param].grad();
    if (g.defined()) {
      view.copy_(g);
    } else {
      view.zero_();  // unused this step on this rank: contributes zeros
    }
  }
}

void GradientBuckets::Unpack(Bucket& b) {
  for (const Member& m : b.members) {
    if (IsView(b, m)) continue;
    params_[m.param].mutable_grad() = Slice(b, m);  // restore the view for the next step
  }
}

double GradientBuckets::AllreduceGradients(Communicator& comm, std::chrono::milliseconds timeout,
                                           ReduceOp op) {
  const auto start = std::chrono::steady_clock::now();
  torch::NoGradGuard no_grad;
  if (comm.size() > 1) {
    // One blocking allreduce per bucket: on the CPU a non-blocking one advances only while it is
    // polled, so launching every bucket first and packing meanwhile overlapped nothing, and Open
    // MPI's blocking algorithms are the faster ones (docs/benchmarks.md, "Fused-gradient
    // allreduce").
    for (Bucket& b : buckets_) {
      Pack(b);
      comm.AllreduceNow(b.flat, op, timeout);
    }
  } else {
    for (Bucket& b : buckets_) Pack(b);
  }
  for (Bucket& b : buckets_) Unpack(b);
  return SecondsSince(start);
}

double GradientBuckets::BroadcastParameters(Communicator& comm, std::chrono::milliseconds timeout) {
  const auto start = std::chrono::steady_clock::now();
  torch::NoGradGuard no_grad;
  // The gradient buckets double as staging buffers; the gradients are zeroed afterwards.
  for (Bucket& b : buckets_) {
    for (const Member& m : b.members) Slice(b, m).copy_(params_[m.param]);
    if (comm.size() > 1) comm.Broadcast(b.flat, /*root=*/0)->Wait(timeout);
    for (const Member& m : b.members) params_[m.param].copy_(Slice(b, m));
    b.flat.zero_();
    for (const Member& m : b.members) params_[m.param].mutable_grad() = Slice(b, m);
  }
  return SecondsSince(start);
}

double GradientBuckets::GradSquaredNorm() {
  torch::NoGradGuard no_grad;
  double sum = 0;
  for (Bucket& b : buckets_) {
    bool all_views = true;
    for (const Member& m : b.members) all_views = all_views && IsView(b, m);
    if (all_views) {
      const double norm =
          torch::linalg_vector_norm(b.flat, 2, at::OptionalIntArrayRef(), false, torch::kFloat64).item<double>();
      sum += norm * norm;
      continue;
    }
    for (const Member& m : b.members) {
      const torch::Tensor& g = params_[m.param].grad();
      if (!g.defined()) continue;
      const double norm =
          torch::linalg_vector_norm(g, 2, at::OptionalIntArrayRef(), false, torch::kFloat64).item<double>();
      sum += norm * norm;
    }
  }
  return sum;
}

int64_t GradientBuckets::total_bytes() const {
  int64_t bytes = 0;
  for (const Bucket& b : buckets_) bytes += b.flat.numel() * b.flat.element_size();
  return bytes;
}

}  // namespace batchlab::runner
