// One run's resolved config (docs/protocol.md), parsed strictly against the one declaration of the
// run config (base/config_fields.cc): an unknown field, a wrong type or a value out of range throws
// BadConfig (exit 2) with the same message the orchestrator gives (config_check.h: the JSON path
// and what is allowed there), and so does an inconsistent combination (batch_size not divisible,
// ...). Absent fields take the declared defaults (the same the orchestrator writes into every
// resolved config), so a hand-written config needs only `batch_size`. No default or range is stated
// here.
//
//   RunConfig config = ParseRunConfig(nlohmann::json::parse(text), /*world_size=*/2);
//   config.local_batch_size;   // batch_size / world_size
//   config.micro_batch_size;   // local_batch_size / accumulation
//
//   RunConfig config = LoadRunConfig("run/config.json", world_size);  // reads, then parses
#ifndef BATCHLAB_RUNNER_CONFIG_RUN_CONFIG_H_
#define BATCHLAB_RUNNER_CONFIG_RUN_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/config_fields.h"
#include "base/lr_schedule.h"
#include "base/run_values.h"
#include "runner/comm/communicator.h"
#include "runner/optim/optimizer_factory.h"

namespace batchlab::runner {

// Config "data": fields without a declared default are absent as 0 / "" (data/test path, sizes).
struct DataConfig {
  std::string name = config::Default<std::string>("data.name");  // a registered dataset
  std::string path;       // fashion-mnist/idx: folder; csv: training file
  std::string test_path;  // csv: held-out file ("" = last 1/6 of `path`)
  int64_t label_column = config::Default<int64_t>("data.label_column");  // csv; -1 = last
  std::string task = config::Default<std::string>("data.task");          // csv
  int64_t samples = 0;       // synthetic: training samples (0 = 16384); else a cap
  int64_t test_samples = 0;  // synthetic: held-out samples (0 = 4096); else a cap
  int64_t features = config::Default<int64_t>("data.features");  // synthetic: input dimension
  double noise = config::Default<double>("data.noise");          // synthetic: label noise sigma
  int64_t seed = config::Default<int64_t>("data.seed");          // synthetic: the data's seed
  // The registered dataset's own fields (undeclared keys under `data`; own_fields.h).
  nlohmann::json own = nlohmann::json::object();
  // Not a field of `data`: the parser copies model.context here (0 when the model has none), so
  // that the text dataset cuts its samples the way the language model reads them.
  int64_t context = 0;
};

struct ModelConfig {
  std::string name = config::Default<std::string>("model.name");  // a registered model
  std::vector<int64_t> hidden = config::Default<std::vector<int64_t>>("model.hidden");
  std::vector<int64_t> channels = config::Default<std::vector<int64_t>>("model.channels");
  bool bias = config::Default<bool>("model.bias");
  // The registered model's own fields (undeclared keys under `model`; own_fields.h).
  nlohmann::json own = nlohmann::json::object();
};

// Config "budget": 0 = not set (the declared default {"epochs": 1} applies when budget is absent).
// base/run_values.h's Budget, so the run length (run_values::LengthOf) reads it as it is.
using BudgetConfig = run_values::Budget;

struct TargetConfig {
  std::string metric;  // test_accuracy | test_loss | loss
  std::string op;      // >= | <= | > | <
  double value = 0;
  bool Met(double observed) const;
};

// Config "checkpoint" (docs/protocol.md, "Checkpoints"): 0 = that cadence is off.
struct CheckpointConfig {
  int64_t every_steps = config::Default<int64_t>("checkpoint.every_steps");
  int64_t every_samples = config::Default<int64_t>("checkpoint.every_samples");
  double every_seconds = config::Default<double>("checkpoint.every_seconds");
  int64_t keep = config::Default<int64_t>("checkpoint.keep");
  std::vector<int64_t> at_steps = config::Default<std::vector<int64_t>>("checkpoint.at_steps");
};

// Config "branch" (docs/spec.md, "Branch study"; set by the orchestrator): this run starts from
// the trunk's checkpoint at at_step. Absent (trunk_run_id "") for every other run.
struct BranchConfig {
  std::string trunk_run_id;
  int64_t at_step = 0;
  int64_t at_samples = 0;
  int64_t trunk_batch_size = 0;
  double multiplier = 0;
  bool present() const { return !trunk_run_id.empty(); }
};

struct RunConfig {
  // Derived by the orchestrator (no declared default); a hand-written config may leave them out:
  // run_id and sweep "", attempt 1, seed 1, the sizes derived from batch_size (docs/runner.md).
  std::string run_id, sweep;
  int64_t attempt = 1;
  int64_t seed = 1;
  int64_t world_size = 1;
  int64_t local_batch_size = 0;
  int64_t micro_batch_size = 0;
  std::string metrics_path;  // "" = no metrics file (tests)

  int64_t nodes = config::Default<int64_t>("nodes");
  int64_t ranks_per_node = config::Default<int64_t>("ranks_per_node");
  int64_t batch_size = 0;  // global; required
  int64_t accumulation = config::Default<int64_t>("accumulation");
  // Config "batch_schedule" (first_batch = batch_size); constant() when absent.
  run_values::BatchSchedule batch_schedule;
  DataConfig data;
  ModelConfig model;
  OptimizerConfig optimizer;
  run_values::LrConfig lr;
  BudgetConfig budget;
  int64_t eval_every_steps = config::Default<int64_t>("eval.every_steps");  // 0 = only at the end
  int64_t eval_subset = config::Default<int64_t>("eval.subset");  // 0 = the whole held-out set
  std::optional<TargetConfig> target;
  CommConfig comm;
  int64_t gns_every_steps = config::Default<int64_t>("gns.every_steps");  // 0 = off
  CheckpointConfig checkpoint;
  BranchConfig branch;
  double divergence_factor = config::Default<double>("divergence_factor");
  int64_t threads = config::Default<int64_t>("threads");
  std::string precision = config::Default<std::string>("precision");  // fp32 | bf16 | fp16
  // Not from the JSON: the CUDA device this rank trains on, -1 for the CPU (main.cc sets it from
  // ChooseCudaDevice, device.h; the parameter-server modes stay on the CPU).
  int cuda_device = -1;
  std::string mode = config::Default<std::string>("mode");            // train | noop
};

// `world_size` is the launcher's (the process count); a config whose world_size disagrees is
// rejected. Pass 0 to accept the config's own world_size (for --validate outside mpirun).
RunConfig ParseRunConfig(const nlohmann::json& json, int64_t world_size);

// Reads and parses `path`; a missing file or bad JSON is a BadConfig naming the file.
RunConfig LoadRunConfig(const std::string& path, int64_t world_size);

// The values `config` holds, as a config (every field the runner reads, at its declared path;
// `target` null when there is none). ParseRunConfig(RunConfigToJson(c)) gives c back.
nlohmann::json RunConfigToJson(const RunConfig& config);

// The dotted paths of the declared fields the runner reads, in declaration order. Every declared
// field but the orchestrator's `program` and the user's `params` (a test keeps the two in step).
std::vector<std::string> RunConfigFieldsRead();

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_CONFIG_RUN_CONFIG_H_
