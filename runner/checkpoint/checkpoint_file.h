// One rank's checkpoint file (docs/protocol.md, "Checkpoints"): a JSON header and named tensors,
// written atomically with a checksum, read back only when every check passes.
//
//   bytes  0..7    magic "BLCKPT\0\1"
//          8..15   header length H (little-endian uint64)
//          16..    header: JSON {"format", "run_id", "config_hash", "step", "rank", "world_size",
//                  "state": {...scalars...}, "tensors": [{"name", "dtype", "shape", "offset",
//                  "bytes"}]}  (offsets from the start of the tensor data)
//          ...     tensor data, each tensor's bytes in row-major order
//          last 8  FNV-1a 64 of every byte before it
//
// Writing: a temporary file in the same folder, fsync, rename, fsync of the folder: a reader sees
// the old file set or the new one, never half a file under a checkpoint's name; an error (a full
// disk) removes the temporary file and throws, and the previous checkpoints stay as they were.
// Reading checks, in order: size, magic, header, format version, run id, config hash, checksum,
// each tensor's extent; any failure is a CheckpointRejected naming the reason, and nothing of the
// file is used. The file is trusted for nothing but its tensors' values (docs/security.md).
//
//   WriteCheckpointFile(path, header, {{"param.0", w}, {"optim.0.momentum", m}});
//   CheckpointFile f = ReadCheckpointFile(path, run_id, config_hash);   // or throws
//   f.Tensor("param.0");
#ifndef BATCHLAB_RUNNER_CHECKPOINT_CHECKPOINT_FILE_H_
#define BATCHLAB_RUNNER_CHECKPOINT_CHECKPOINT_FILE_H_

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "base/run_protocol.h"

namespace batchlab::runner {

// 2: the data cursor is global (elastic resume); 1: one data shard per rank (still read).
inline constexpr int kCheckpointFormat = 2;

// Why a checkpoint file cannot be used (truncated, checksum, another run, newer format, ...).
class CheckpointRejected : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct CheckpointFile {
  nlohmann::json header;
  std::map<std::string, torch::Tensor> tensors;
  // The named tensor; throws CheckpointRejected when the file has none of that name.
  const torch::Tensor& Tensor(const std::string& name) const;
  bool Has(const std::string& name) const { return tensors.count(name) > 0; }
};

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

// `header` gets "format" and "tensors" filled in. Returns the bytes written. Throws
// std::runtime_error (with the path and errno's text) when the file cannot be written.
int64_t WriteCheckpointFile(const std::string& path, nlohmann::json header,
                            const NamedTensors& tensors);

// Reads and checks `path` against the run it must belong to. Throws CheckpointRejected. An empty
// `config_hash` accepts any (a branch run reads its trunk's checkpoint: another config by design).
CheckpointFile ReadCheckpointFile(const std::string& path, const std::string& run_id,
                                  const std::string& config_hash);

// The file name of `rank`'s shard of the checkpoint at `step` is
// protocol::CheckpointShardName(step, rank) (base/run_protocol.h): "step-00000040.rank-0.ckpt".
// The step a rank-0 file name holds, or -1 when `name` is not one.
int64_t CheckpointStepOf(const std::string& name);

// 64-bit FNV-1a over `size` bytes, continuing from `hash`.
uint64_t Fnv1a64(const void* data, size_t size, uint64_t hash = 14695981039346656037ull);

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_CHECKPOINT_CHECKPOINT_FILE_H_
