// Where a rank trains: the CPU, or one CUDA device (docs/gpu.md).
//
//   config.cuda_device = ChooseCudaDevice(where.local_rank);   // main.cc, before the Trainer
//   torch::Device device = TrainingDevice(config);             // kCPU or kCUDA:<index>
//
// A rank takes CUDA device local_rank % device_count when this runner's LibTorch has CUDA and a
// device is visible (the orchestrator's GPU slots set CUDA_VISIBLE_DEVICES to the run's own, so
// the first visible one is this rank's); BATCHLAB_DEVICE=cpu keeps it on the CPU, and
// BATCHLAB_DEVICE=cuda makes a missing device an error instead of a silent CPU run. The same
// index is the one the nccl communicator binds (nccl_communicator.cc).
//
// StepClock times the phases of a step: on the CPU with the steady clock, on a CUDA device with
// CUDA events recorded on the default stream (the one LibTorch's kernels run on), read once the
// step's last mark has completed, so a phase's time is the device's, not the host's launch time.
#ifndef BATCHLAB_RUNNER_CONFIG_DEVICE_H_
#define BATCHLAB_RUNNER_CONFIG_DEVICE_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace batchlab::runner {

struct RunConfig;

// -1: the CPU. Reads BATCHLAB_DEVICE (auto | cpu | cuda; default auto). Throws BadConfig for
// BATCHLAB_DEVICE=cuda without a device, or an unknown value.
int ChooseCudaDevice(int local_rank);

torch::Device TrainingDevice(const RunConfig& config);

// "cpu" or "cuda:0 (NVIDIA H200)": the start line's `device`.
std::string DeviceName(const torch::Device& device);

// True when `bytes` more fit on `device` with a quarter of its memory left free (always true on
// the CPU: the data set is there already).
bool FitsOnDevice(const torch::Device& device, int64_t bytes);

// The random generator of `device` (its state for checkpoints): the CPU's or the CUDA device's.
at::Generator DefaultGenerator(const torch::Device& device);

class StepClock {
 public:
  StepClock(const torch::Device& device, int marks);
  ~StepClock();
  StepClock(const StepClock&) = delete;
  StepClock& operator=(const StepClock&) = delete;

  void Mark(int i);                    // now, in the device's order of work
  double Seconds(int from, int to);    // between two marks of this step (waits for `to`)
  std::chrono::steady_clock::time_point HostTime(int i) const { return host_[i]; }

 private:
  bool cuda_ = false;
  std::vector<std::chrono::steady_clock::time_point> host_;
  std::vector<void*> events_;  // cudaEvent_t on a CUDA device
};

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_CONFIG_DEVICE_H_
