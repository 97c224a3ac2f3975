// One run's resolved config (docs/protocol.md), parsed strictly: an unknown field, a wrong type
// or an inconsistent value throws BadConfig (exit 2) with a message naming the JSON path and the
// fix. Optional fields take the defaults documented in docs/runner.md (the same as the
// orchestrator's docs/spec.md), so a hand-written config needs only `batch_size`.
//
//   RunConfig config = ParseRunConfig(nlohmann::json::parse(text), /*world_size=*/2);
//   config.local_batch_size;   // batch_size / world_size
//   config.micro_batch_size;   // local_batch_size / accumulation
//
//   RunConfig config = LoadRunConfig("run/config.json", world_size);  // reads, then parses
#ifndef BATCHLAB_RUNNER_RUN_CONFIG_H_
#define BATCHLAB_RUNNER_RUN_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner/communicator.h"
#include "runner/lr_schedule.h"
#include "runner/optimizer_factory.h"

namespace batchlab::runner {

struct DataConfig {
  std::string name = "fashion-mnist";  // fashion-mnist | synthetic-linear | idx | csv
  std::string path;                    // fashion-mnist/idx: folder; csv: training file
  std::string test_path;               // csv: held-out file ("" = last 1/6 of `path`)
  int64_t label_column = -1;           // csv: column of the label (-1 = last)
  std::string task;                    // csv: classification | regression ("" = classification)
  int64_t samples = 0;                 // synthetic: training samples (0 = 16384); else a cap
  int64_t test_samples = 0;            // synthetic: held-out samples (0 = 4096)
  int64_t features = 0;                // synthetic: input dimension d (0 = 16)
  double noise = 1.0;                  // synthetic: label noise standard deviation sigma
  int64_t seed = 1234;                 // synthetic: data seed (independent of the run seed)
};

struct ModelConfig {
  std::string name = "mlp";                  // logreg | mlp | cnn
  std::vector<int64_t> hidden = {128};       // mlp: hidden widths; cnn: width of the dense layer
  std::vector<int64_t> channels = {16, 32};  // cnn: conv channels (two 5x5 conv + pool blocks)
  bool bias = true;
};

struct BudgetConfig {
  double epochs = 0;  // 0 = not set
  int64_t steps = 0;
  int64_t samples = 0;
  double seconds = 0;
};

struct TargetConfig {
  std::string metric;  // test_accuracy | test_loss | loss
  std::string op;      // >= | <= | > | <
  double value = 0;
  bool Met(double observed) const;
};

struct RunConfig {
  std::string run_id, sweep;
  int64_t attempt = 1;
  int64_t seed = 1;
  int64_t nodes = 1, ranks_per_node = 1, world_size = 1;
  int64_t batch_size = 0;  // global
  int64_t accumulation = 1;
  int64_t local_batch_size = 0;
  int64_t micro_batch_size = 0;
  DataConfig data;
  ModelConfig model;
  OptimizerConfig optimizer;
  LrConfig lr;
  BudgetConfig budget;
  int64_t eval_every_steps = 0;  // 0 = only at the end
  int64_t eval_subset = 0;       // 0 = the whole held-out set
  std::optional<TargetConfig> target;
  CommConfig comm;
  int64_t gns_every_steps = 1;  // 0 = off
  double divergence_factor = 10.0;
  int64_t threads = 1;
  std::string precision = "fp32";  // fp32 | bf16 | fp16
  std::string mode = "train";      // train | noop
  std::string metrics_path;
};

// `world_size` is the launcher's (the process count); a config whose world_size disagrees is
// rejected. Pass 0 to accept the config's own world_size (for --validate outside mpirun).
RunConfig ParseRunConfig(const nlohmann::json& json, int64_t world_size);

// Reads and parses `path`; a missing file or bad JSON is a BadConfig naming the file.
RunConfig LoadRunConfig(const std::string& path, int64_t world_size);

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_RUN_CONFIG_H_
