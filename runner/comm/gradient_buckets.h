// Tensor fusion for data-parallel SGD: the model's gradients, in a fixed parameter order, are
// packed into contiguous buckets of about `bucket_mb` megabytes; each bucket is allreduced
// (average) in the same order on every rank while the next is being packed, then unpacked.
// The buckets are allocated once; each parameter's .grad() is made a view into its bucket, so
// while autograd keeps accumulating into those views (zero_grad that zeroes in place) packing
// and unpacking cost nothing. If something replaces a gradient tensor (zero_grad with
// set_to_none, or a fresh .grad()), it is copied in and the view is restored.
//
//   GradientBuckets buckets(model->parameters(), config.comm.bucket_mb);
//   buckets.BroadcastParameters(*comm, timeout);           // once: rank 0's initial weights
//   ... loss.backward();
//   double seconds = buckets.AllreduceGradients(*comm, timeout);  // grads now averaged
//   (or scale the loss by 1/world before backward and pass ReduceOp::kSum: the sum is then the
//   average, without a division pass over every bucket)
//   optimizer->step();
//
// A parameter larger than a bucket gets a bucket of its own; buckets never mix dtypes.
#ifndef BATCHLAB_RUNNER_COMM_GRADIENT_BUCKETS_H_
#define BATCHLAB_RUNNER_COMM_GRADIENT_BUCKETS_H_

#include <chrono>
#include <cstdint>
#include <vector>

#include <torch/types.h>

#include "runner/comm/communicator.h"

namespace batchlab::runner {

// The strides of a gradient laid over `param.numel()` consecutive elements of a flat buffer: the
// parameter's own when it is dense (contiguous, channels-last, any permutation), so that the
// gradient keeps autograd's layout contract; else contiguous.
std::vector<int64_t> GradientStrides(const torch::Tensor& param);

class GradientBuckets {
 public:
  // Throws BadConfig naming comm.bucket_mb if it is not positive.
  GradientBuckets(std::vector<torch::Tensor> params, double bucket_mb);

  // Overwrites every rank's parameters with rank 0's (bucket by bucket) and zeroes the gradients.
  // Returns the seconds spent.
  double BroadcastParameters(Communicator& comm, std::chrono::milliseconds timeout);

  // Averages (kAvg) or sums (kSum) every parameter's gradient over the ranks (a parameter without
  // a gradient counts as zeros). Returns the wall seconds of the whole exchange (pack, allreduce,
  // unpack).
  double AllreduceGradients(Communicator& comm, std::chrono::milliseconds timeout,
                            ReduceOp op = ReduceOp::kAvg);

  // Sum of squared gradient entries over all parameters (e.g. before the allreduce for the
  // gradient noise scale's local |G|^2, after it for the global one).
  double GradSquaredNorm();

  int64_t num_buckets() const { return static_cast<int64_t>(buckets_.size()); }
  int64_t bucket_numel(int64_t i) const { return buckets_[static_cast<size_t>(i)].flat.numel(); }
  int64_t total_bytes() const;

 private:
  struct Member {
    size_t param;    // index into params_
    int64_t offset;  // first element in the bucket
    int64_t numel;
    std::vector<int64_t> strides;  // its gradient's: GradientStrides(param), computed once
  };
  struct Bucket {
    torch::Tensor flat;  // contiguous, one dtype
    std::vector<Member> members;
  };

  torch::Tensor Slice(const Bucket& b, const Member& m) const;
  bool IsView(const Bucket& b, const Member& m) const;  // grad still aliases the bucket slice
  void Pack(Bucket& b);
  void Unpack(Bucket& b);

  std::vector<torch::Tensor> params_;
  std::vector<Bucket> buckets_;
};

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_COMM_GRADIENT_BUCKETS_H_
