// Host staging of device tensors for the mpi and gloo backends (see host_staged_communicator.h).
#include "runner/comm/host_staged_communicator.h"

#include <torch/torch.h>

namespace batchlab::runner {
namespace {

// Waits for the backend's work on the host copy, then copies the result back to the device.
class StagedWork : public Work {
 public:
  StagedWork(std::unique_ptr<Work> inner, torch::Tensor device, torch::Tensor host)
      : inner_(std::move(inner)), device_(std::move(device)), host_(std::move(host)) {}

  void Wait(std::chrono::milliseconds timeout) override {
    inner_->Wait(timeout);
    CopyBack();
  }
  bool Test() override {
    if (!inner_->Test()) return false;
    CopyBack();
    return true;
  }

 private:
  void CopyBack() {
    if (copied_) return;
    device_.copy_(host_);
    copied_ = true;
  }
  std::unique_ptr<Work> inner_;
  torch::Tensor device_, host_;
  bool copied_ = false;
};

class HostStaged : public Communicator {
 public:
  explicit HostStaged(std::unique_ptr<Communicator> inner) : inner_(std::move(inner)) {}

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  const char* backend() const override { return inner_->backend(); }

  std::unique_ptr<Work> Allreduce(torch::Tensor& tensor, ReduceOp op) override {
    if (!tensor.is_cuda()) return inner_->Allreduce(tensor, op);
    torch::Tensor host = tensor.to(torch::kCPU).contiguous();
    return std::make_unique<StagedWork>(inner_->Allreduce(host, op), tensor, host);
  }
  std::unique_ptr<Work> Broadcast(torch::Tensor& tensor, int root) override {
    if (!tensor.is_cuda()) return inner_->Broadcast(tensor, root);
    torch::Tensor host = tensor.to(torch::kCPU).contiguous();
    return std::make_unique<StagedWork>(inner_->Broadcast(host, root), tensor, host);
  }
  std::unique_ptr<Work> Barrier() override { return inner_->Barrier(); }
  void AllreduceNow(torch::Tensor& tensor, ReduceOp op,
                    std::chrono::milliseconds timeout) override {
    if (!tensor.is_cuda()) return inner_->AllreduceNow(tensor, op, timeout);
    torch::Tensor host = tensor.to(torch::kCPU).contiguous();
    inner_->AllreduceNow(host, op, timeout);
    tensor.copy_(host);
  }
  std::unique_ptr<Work> Send(const torch::Tensor& tensor, int to, int tag) override {
    return inner_->Send(tensor, to, tag);
  }
  std::unique_ptr<Work> Recv(torch::Tensor& tensor, int from, int tag) override {
    return inner_->Recv(tensor, from, tag);
  }
  void Abandon() override { inner_->Abandon(); }

 private:
  std::unique_ptr<Communicator> inner_;
};

}  // namespace

std::unique_ptr<Communicator> StageDeviceTensorsOnHost(std::unique_ptr<Communicator> inner) {
  return std::make_unique<HostStaged>(std::move(inner));
}

}  // namespace batchlab::runner
