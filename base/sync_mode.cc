// The table of sync modes (see sync_mode.h).
#include "base/sync_mode.h"

namespace batchlab {

// Declaration order: the order of comm.sync's allowed values and of its meaning. A function's
// static, so the declaration (built in other units' static initializers) finds it made.
const std::vector<SyncModeInfo>& SyncModes() {
  static const std::vector<SyncModeInfo> kSyncModes = {
      // mode, name, means,
      //   parameter_server, one_worker_steps, branchable, fp16, schedule, reshard,
      //   detail_field, detail_label, report_order
      {SyncMode::kAllreduce, "allreduce", "allreduce of gradients every step",
       false, false, true, true, true, Reshard::kAlways, "", "", 0},
      {SyncMode::kLag, "lag", "lag (one-step-stale gradients)",
       false, false, true, false, false, Reshard::kAlways, "", "", 1},
      {SyncMode::kLocalSgd, "local_sgd", "local_sgd (average parameters every sync_every steps)",
       false, false, true, true, false, Reshard::kAtAverage, "sync_every", "H", 2},
      {SyncMode::kAsyncPs, "async_ps", "async_ps (rank 0 a parameter server)",
       true, true, false, false, false, Reshard::kNever, "", "", 4},
      {SyncMode::kBackup, "backup", "backup (drop the last backup_workers gradients)",
       true, false, false, false, false, Reshard::kNever, "backup_workers", "b", 3},
  };
  return kSyncModes;
}

const SyncModeInfo* FindSyncMode(std::string_view name) {
  for (const SyncModeInfo& m : SyncModes()) {
    if (name == m.name) return &m;
  }
  return nullptr;
}

const SyncModeInfo& InfoOf(SyncMode mode) {
  for (const SyncModeInfo& m : SyncModes()) {
    if (m.mode == mode) return m;
  }
  return SyncModes().front();  // unreachable: every enumerator has its entry
}

std::vector<std::string> SyncModeNames() {
  std::vector<std::string> names;
  for (const SyncModeInfo& m : SyncModes()) names.emplace_back(m.name);
  return names;
}

std::string SyncModeNamesWith(bool SyncModeInfo::*capability, std::string_view last_joiner,
                              bool quoted) {
  std::vector<std::string> names;
  for (const SyncModeInfo& m : SyncModes()) {
    if (capability == nullptr || m.*capability) {
      names.push_back(quoted ? "\"" + std::string(m.name) + "\"" : std::string(m.name));
    }
  }
  std::string text;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) text += i + 1 == names.size() ? " " + std::string(last_joiner) + " " : ", ";
    text += names[i];
  }
  return text;
}

}  // namespace batchlab
