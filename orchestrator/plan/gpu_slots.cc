#include "orchestrator/plan/gpu_slots.h"

#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

namespace batchlab::orchestrator {

std::vector<std::string> VisibleDeviceEntries(const std::string& value) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= value.size()) {
    size_t comma = value.find(',', start);
    if (comma == std::string::npos) comma = value.size();
    std::string entry = value.substr(start, comma - start);
    while (!entry.empty() && entry.front() == ' ') entry.erase(entry.begin());
    while (!entry.empty() && entry.back() == ' ') entry.pop_back();
    if (entry.empty() || entry.front() == '-') break;  // CUDA stops at an invalid entry
    out.push_back(entry);
    start = comma + 1;
  }
  return out;
}

int CountGpus(const std::optional<std::string>& cuda_visible_devices, const std::string& dev_dir) {
  if (cuda_visible_devices)
    return static_cast<int>(VisibleDeviceEntries(*cuda_visible_devices).size());
  int n = 0;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dev_dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    // nvidia0, nvidia1, ...: one per GPU (not nvidiactl, nvidia-uvm, nvidia-modeset).
    if (name.size() > 6 && name.compare(0, 6, "nvidia") == 0 &&
        name.find_first_not_of("0123456789", 6) == std::string::npos) {
      ++n;
    }
  }
  return n;
}

int DetectGpus() {
  const char* visible = std::getenv(kCudaVisibleDevices);
  return CountGpus(visible ? std::optional<std::string>(visible) : std::nullopt, "/dev");
}

GpuAllocator::GpuAllocator(int gpus) : busy_(static_cast<size_t>(std::max(0, gpus)), false) {}

std::optional<std::vector<int>> GpuAllocator::Allocate(int n) {
  if (n < 0 || n > free()) return std::nullopt;
  std::vector<int> ids;
  for (size_t id = 0; id < busy_.size() && static_cast<int>(ids.size()) < n; ++id) {
    if (!busy_[id]) {
      busy_[id] = true;
      ids.push_back(static_cast<int>(id));
    }
  }
  return ids;
}

void GpuAllocator::Release(const std::vector<int>& ids) {
  for (int id : ids) {
    if (id >= 0 && static_cast<size_t>(id) < busy_.size()) busy_[static_cast<size_t>(id)] = false;
  }
}

int GpuAllocator::free() const {
  int n = 0;
  for (bool b : busy_) n += b ? 0 : 1;
  return n;
}

std::string CudaVisibleDevices(const std::vector<int>& ids,
                               const std::map<std::string, std::string>& current) {
  std::vector<std::string> names;
  if (auto it = current.find(kCudaVisibleDevices); it != current.end()) {
    names = VisibleDeviceEntries(it->second);
  }
  std::string out;
  for (int id : ids) {
    if (!out.empty()) out += ",";
    out += id >= 0 && static_cast<size_t>(id) < names.size() ? names[static_cast<size_t>(id)]
                                                             : std::to_string(id);
  }
  return out;
}

Status CheckGpuNeeds(const Spec& spec, const Plan& plan, int pool_gpus) {
  const PlannedRun* worst = nullptr;
  for (const PlannedRun& r : plan.runs) {
    if (r.gpus > pool_gpus && (worst == nullptr || r.gpus > worst->gpus)) worst = &r;
  }
  if (worst == nullptr) return OkStatus();
  return InvalidArgumentError(fmt::format(
      "resources.gpus_per_rank: run {} needs {} GPU(s) (world_size {} x gpus_per_rank {}) but the "
      "pool has {} GPU(s) (--gpus; default: this machine's, from CUDA_VISIBLE_DEVICES or "
      "/dev/nvidia*), so it could never start; pass --gpus {} or more on a machine with that many "
      "GPUs, or use fewer ranks (nodes x ranks_per_node) or a smaller resources.gpus_per_rank",
      worst->id, worst->gpus, worst->world_size, spec.resources.gpus_per_rank, pool_gpus,
      worst->gpus));
}

std::string GpuMappingText(const PlannedRun& run) {
  if (run.gpus <= 0) return "-";
  if (run.gpus_per_rank == 1) return "cuda: rank r -> local rank r";
  // The built-in runner takes device local_rank % device_count; the other devices are visible
  // to a user program that uses several per rank.
  return fmt::format("cuda: rank r -> local rank r ({} visible)", run.gpus);
}

}  // namespace batchlab::orchestrator
