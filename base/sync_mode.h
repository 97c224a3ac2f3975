// The sync modes (config "comm.sync", docs/sync.md): one table of every mode, its name and what it
// can do, read by the config declaration (base/config_fields.cc), the runner's checks and loops
// (runner/config/run_config.cc, runner/train/), the analysis (analysis/sections/sync_modes.cc) and
// the branch-study checks (orchestrator/spec/branch_study.cc). No LibTorch: each mode's
// implementation is the runner's (runner/sync/sync_mode_factory.h).
//
//   const SyncModeInfo* m = FindSyncMode("local_sgd");   // null for an unknown name
//   if (!m->fp16) { ... }                                // refuses loss scaling
//   for (const SyncModeInfo& mode : SyncModes()) { ... } // declaration order
//
// Adding a mode: one entry in SyncModes() (sync_mode.cc) and its implementation in runner/sync/
// (a StepExchange or an UpdateRule, made in sync_mode_factory.cc).
#ifndef BATCHLAB_BASE_SYNC_MODE_H_
#define BATCHLAB_BASE_SYNC_MODE_H_

#include <string>
#include <string_view>
#include <vector>

namespace batchlab {

enum class SyncMode {
  kAllreduce,  // gradients averaged every step (runner/comm/gradient_buckets.h)
  kLag,        // one-step-stale gradients (runner/sync/lagged_gradient.h)
  kLocalSgd,   // parameters averaged every comm.sync_every steps (runner/sync/parameter_average.h)
  kAsyncPs,    // rank 0 a parameter server, first gradient wins (runner/sync/parameter_server.h)
  kBackup,     // rank 0 a parameter server, the slowest backup_workers dropped (the same)
};

// Whether a checkpoint of the mode resumes at another world size (elastic resume).
enum class Reshard {
  kAlways,     // every rank holds the same state after a step
  kAtAverage,  // only at a step where the ranks averaged (local_sgd)
  kNever,      // every rank keeps a state of its own (the parameter-server modes)
};

struct SyncModeInfo {
  SyncMode mode;
  const char* name;   // comm.sync's value
  const char* means;  // its part of comm.sync's meaning in the declaration
  // Rank 0 serves the others (loops of their own in runner/train/trainer_ps.cc, on the CPU, over
  // point-to-point messages: backend mpi); else a collective StepExchange every rank runs.
  bool parameter_server;
  // A step is one worker's update of its local batch and rank 0 reads no data (async_ps); else a
  // step trains the global batch of every data rank.
  bool one_worker_steps;
  bool branchable;  // its checkpoints restore the run exactly: a branch may start from one
  bool fp16;        // works with fp16's loss scaling
  bool schedule;    // trains at a batch_schedule (a batch that changes during the run)
  Reshard reshard;
  // The comm field shown beside the mode in the analysis ("" none) and its label there.
  const char* detail_field;
  const char* detail_label;
  int report_order;  // the analysis table's order (synchronous first)
};

// Every mode, in declaration order.
const std::vector<SyncModeInfo>& SyncModes();
// The mode named `name`, or null.
const SyncModeInfo* FindSyncMode(std::string_view name);
const SyncModeInfo& InfoOf(SyncMode mode);
inline const char* SyncModeName(SyncMode mode) { return InfoOf(mode).name; }
// The names, in declaration order (the declaration's allowed values).
std::vector<std::string> SyncModeNames();
// The names of the modes with `capability` (null: every mode) for a message, in declaration
// order: "allreduce and local_sgd" (last_joiner "and"), or quoted "\"allreduce\", \"lag\" or
// \"local_sgd\"".
std::string SyncModeNamesWith(bool SyncModeInfo::*capability, std::string_view last_joiner,
                              bool quoted);

}  // namespace batchlab

#endif  // BATCHLAB_BASE_SYNC_MODE_H_
