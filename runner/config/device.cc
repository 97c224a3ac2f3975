// Device choice, device memory and step timing (see device.h).
#include "runner/config/device.h"

#include <cstdlib>

#include <ATen/Context.h>
#include <torch/cuda.h>

#ifdef BATCHLAB_WITH_NCCL  // the CUDA runtime is linked (runner/CMakeLists.txt)
#include <cuda_runtime_api.h>
#endif

#include "base/elapsed.h"
#include "runner/config/run_config.h"
#include "runner/config/runner_error.h"

namespace batchlab::runner {

int ChooseCudaDevice(int local_rank) {
  const char* env = std::getenv("BATCHLAB_DEVICE");
  const std::string want = env != nullptr && *env != '\0' ? env : "auto";
  if (want != "auto" && want != "cpu" && want != "cuda") {
    throw BadConfig("BATCHLAB_DEVICE: \"" + want + "\" is not a device; use auto, cpu or cuda");
  }
  if (want == "cpu") return -1;
  const bool available = torch::cuda::is_available();
  if (!available) {
    if (want == "cuda") {
      throw BadConfig(
          "BATCHLAB_DEVICE: \"cuda\" but no CUDA device is visible to this rank (or this "
          "runner's LibTorch has no CUDA: docs/gpu.md); unset it to train on the CPU");
    }
    return -1;
  }
  const int count = static_cast<int>(torch::cuda::device_count());
  const int index = (local_rank < 0 ? 0 : local_rank) % count;
#ifdef BATCHLAB_WITH_NCCL
  cudaSetDevice(index);  // the current device of this process: events, NCCL, LibTorch's default
#endif
  return index;
}

torch::Device TrainingDevice(const RunConfig& config) {
  if (config.cuda_device < 0) return torch::Device(torch::kCPU);
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(config.cuda_device));
}

std::string DeviceName(const torch::Device& device) {
  if (!device.is_cuda()) return "cpu";
  std::string name = device.str();
#ifdef BATCHLAB_WITH_NCCL
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device.index()) == cudaSuccess) {
    name += std::string(" (") + prop.name + ")";
  }
#endif
  return name;
}

bool FitsOnDevice(const torch::Device& device, int64_t bytes) {
  if (!device.is_cuda()) return true;
#ifdef BATCHLAB_WITH_NCCL
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) return false;
  return static_cast<double>(bytes) <=
         static_cast<double>(free_bytes) - 0.25 * static_cast<double>(total_bytes);
#else
  (void)bytes;
  return false;
#endif
}

at::Generator DefaultGenerator(const torch::Device& device) {
  return at::globalContext().defaultGenerator(device);
}

StepClock::StepClock(const torch::Device& device, int marks)
    : cuda_(device.is_cuda()), host_(static_cast<size_t>(marks)) {
#ifdef BATCHLAB_WITH_NCCL
  if (cuda_) {
    events_.resize(static_cast<size_t>(marks), nullptr);
    for (void*& e : events_) {
      cudaEvent_t event = nullptr;
      if (cudaEventCreate(&event) != cudaSuccess) {
        throw RunnerError(RunnerError::Kind::kInternal, "cudaEventCreate failed");
      }
      e = event;
    }
  }
#else
  cuda_ = false;
#endif
}

StepClock::~StepClock() {
#ifdef BATCHLAB_WITH_NCCL
  for (void* e : events_) cudaEventDestroy(static_cast<cudaEvent_t>(e));
#endif
}

void StepClock::Mark(int i) {
  host_[static_cast<size_t>(i)] = std::chrono::steady_clock::now();
#ifdef BATCHLAB_WITH_NCCL
  // Stream 0: the legacy default stream, LibTorch's current stream unless a program sets another.
  if (cuda_) cudaEventRecord(static_cast<cudaEvent_t>(events_[static_cast<size_t>(i)]), nullptr);
#endif
}

double StepClock::Seconds(int from, int to) {
#ifdef BATCHLAB_WITH_NCCL
  if (cuda_) {
    auto a = static_cast<cudaEvent_t>(events_[static_cast<size_t>(from)]);
    auto b = static_cast<cudaEvent_t>(events_[static_cast<size_t>(to)]);
    float ms = 0;
    if (cudaEventSynchronize(b) == cudaSuccess && cudaEventElapsedTime(&ms, a, b) == cudaSuccess) {
      return static_cast<double>(ms) / 1000.0;
    }
  }
#endif
  return SecondsBetween(host_[static_cast<size_t>(from)], host_[static_cast<size_t>(to)]);
}

}  // namespace batchlab::runner
