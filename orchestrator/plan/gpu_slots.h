// GPU slots (docs/spec.md, "Placement"): the GPUs of this machine as a second resource of the
// local pool, next to its slots (cores). A run needs world_size x resources.gpus_per_rank GPUs;
// the scheduler (scheduler.h) starts it only when that many are free, a GpuAllocator hands it
// concrete device ids (the lowest free ones; never one id to two runs at once), the local
// launcher sets CUDA_VISIBLE_DEVICES to them, and each rank's CUDA device is then its local rank
// (the runner takes local_rank % device_count). Nothing here needs CUDA: the GPUs are counted
// from CUDA_VISIBLE_DEVICES or the /dev/nvidia<N> device files.
//
//   int gpus = DetectGpus();                                   // --gpus default
//   BATCHLAB_RETURN_IF_ERROR(CheckGpuNeeds(spec, plan, gpus));  // before anything runs
//   GpuAllocator alloc(gpus);
//   std::optional<std::vector<int>> ids = alloc.Allocate(4);   // {0, 1, 2, 3}
//   env["CUDA_VISIBLE_DEVICES"] = CudaVisibleDevices(*ids, current_env);
//   alloc.Release(*ids);                                       // when the run ends
#ifndef BATCHLAB_ORCHESTRATOR_PLAN_GPU_SLOTS_H_
#define BATCHLAB_ORCHESTRATOR_PLAN_GPU_SLOTS_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "orchestrator/spec/expansion.h"
#include "orchestrator/spec/spec.h"

namespace batchlab::orchestrator {

inline constexpr const char* kCudaVisibleDevices = "CUDA_VISIBLE_DEVICES";

// The entries of a CUDA_VISIBLE_DEVICES value ("0,1", "GPU-<uuid>,...", "" = none). As CUDA
// does, the list ends at the first entry that is empty or a negative number ("-1": no GPU).
std::vector<std::string> VisibleDeviceEntries(const std::string& value);

// GPUs of this machine: the entries of `cuda_visible_devices` when it is set, else the number of
// /dev/nvidia<N> files under `dev_dir`. Exposed for tests; DetectGpus() reads the real ones.
int CountGpus(const std::optional<std::string>& cuda_visible_devices, const std::string& dev_dir);
int DetectGpus();

// Hands out device ids 0 .. gpus-1: Allocate(n) takes the n lowest free ids (so a run of the same
// shape tends to get the same ids again), Release gives them back. An id is never handed to two
// holders at once.
class GpuAllocator {
 public:
  explicit GpuAllocator(int gpus);
  // nullopt when fewer than n are free; Allocate(0) is an empty list.
  std::optional<std::vector<int>> Allocate(int n);
  // Gives back ids from Allocate; an id not held (or out of range) is ignored.
  void Release(const std::vector<int>& ids);
  int free() const;
  int total() const { return static_cast<int>(busy_.size()); }

 private:
  std::vector<bool> busy_;
};

// The CUDA_VISIBLE_DEVICES value for a run holding pool ids `ids`: pool id k is the k-th entry
// of the orchestrator's own CUDA_VISIBLE_DEVICES (in `current`) when that is set and has a k-th
// entry, else the device number k. Comma-separated, in the order of `ids`.
std::string CudaVisibleDevices(const std::vector<int>& ids,
                               const std::map<std::string, std::string>& current);

// INVALID_ARGUMENT naming resources.gpus_per_rank when some run of `plan` needs more GPUs
// (world_size x gpus_per_rank) than the pool's `pool_gpus`: it could never start. The fix:
// --gpus, or fewer ranks / GPUs per rank.
Status CheckGpuNeeds(const Spec& spec, const Plan& plan, int pool_gpus);

// "cuda: rank r -> local rank r (1 GPU per rank)" and the like, for `sweep plan`.
std::string GpuMappingText(const PlannedRun& run);

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_PLAN_GPU_SLOTS_H_
