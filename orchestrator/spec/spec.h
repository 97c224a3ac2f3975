// A sweep spec: the JSON file a researcher writes (docs/spec.md, sweeps/spec.schema.json),
// parsed and strictly validated. Every error names the JSON path and what is allowed there:
//
//   StatusOr<Spec> spec = LoadSpecFile("sweeps/quickstart.json");
//   // bad input -> INVALID_ARGUMENT "sweeps/x.json: axes.batch_size[3]: 0 is not a positive
//   integer" for (const Axis& axis : spec->axes) ...;   // grid axes and zipped groups, in written
//   order
//
// Parsing never touches the database or the file system beyond reading the spec file.
#ifndef BATCHLAB_ORCHESTRATOR_SPEC_SPEC_H_
#define BATCHLAB_ORCHESTRATOR_SPEC_SPEC_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "orchestrator/spec/branch_study.h"
#include "orchestrator/spec/lr_search.h"

namespace batchlab::orchestrator {

// One axis of the grid. A grid axis (`axes`) has one column; a zipped group (`zip`) has several
// columns of equal length, taken together position by position.
struct Axis {
  struct Column {
    std::string path;  // dotted config path, e.g. "lr.base"
    std::vector<nlohmann::json> values;
  };
  std::vector<Column> columns;
  size_t size() const { return columns.empty() ? 0 : columns.front().values.size(); }
};

// Seeded random samples crossed with the grid: `count` draws, each drawing every parameter.
struct RandomParam {
  enum class Distribution { kUniform, kLogUniform, kIntUniform, kChoice };
  std::string path;
  Distribution distribution = Distribution::kUniform;
  double low = 0, high = 0;             // uniform, log_uniform, int_uniform (inclusive)
  std::vector<nlohmann::json> choices;  // choice
};
struct RandomSamples {
  int count = 0;  // 0: no random axis
  uint64_t seed = 0;
  std::vector<RandomParam> params;
};

// Drops the points whose resolved `field` does not satisfy `op` against `value` (a literal) or
// `value_of` ("dataset_size", "sqrt(dataset_size)" or another field's path) times `scale`.
struct Constraint {
  std::string field;
  std::string op;  // "<", "<=", ">", ">=", "==", "!="
  nlohmann::json value;
  std::string value_of;
  double scale = 1.0;
  std::string label;  // "constraints[1]"
};

struct Resources {
  int slots_per_rank = 0;            // 0: the run's `threads`
  double timeout_seconds = 0;        // per attempt; 0: none
  int retries = 1;                   // extra attempts after a failure or timeout
  double retry_backoff_seconds = 2;  // doubled after every failed attempt
  double expected_seconds = 0;       // per run, for packing and ETA; 0: estimated from the budget
  int gpus_per_rank = 0;             // GPUs each rank owns (gpu_slots.h); 0: a CPU run
};

struct LaunchSettings {
  std::map<std::string, std::string> env;  // overrides the environment and the defaults
  std::vector<std::string> mpirun_args;    // inserted before the runner
};

// slurm.elastic (docs/spec.md): an attempt may run on fewer nodes than the run's `nodes`, down
// to min_nodes, when the partition cannot give it all of them (a host lost, nodes busy); the
// run resumes its checkpoint at the rank count it got (docs/protocol.md, "Elastic resume").
struct SlurmElastic {
  int min_nodes = 1;
  // How long an attempt waits in the queue for the run's own node count before it takes what
  // the partition can give now (`scontrol update NumNodes=min_nodes-nodes`); 0: it asks for
  // min_nodes-nodes at once (Slurm starts it on as many as it can give).
  double pending_seconds = 0;
};

struct SlurmSettings {
  std::string partition;
  int time_limit_minutes = 30;
  int cpus_per_task = 0;  // 0: slots_per_rank
  // Seconds before the time limit at which Slurm sends SIGUSR2 (`--signal=B:USR2@N`): the run
  // checkpoints and exits `preempted`, and a new allocation resumes it. 0: no signal. Capped at
  // half the time limit.
  int signal_seconds = 120;
  std::vector<std::string> sbatch_args;
  std::optional<SlurmElastic> elastic;  // none: every attempt runs on the run's `nodes`
};

// The stall rule a spec without a "stall" object gets (docs/spec.md "Stall rule"): with a
// `base.target` on test_accuracy (>=, >) or test_loss (<=, <) of the built-in runner's
// fashion-mnist (10 classes), {"evals": kDefaultStallEvals, "chance": 0.1 or ln 10}; otherwise
// none. `note` says which, and why not (empty without a target).
inline constexpr int kDefaultStallEvals = 10;
struct SpecStallDefault {
  std::optional<std::pair<int, double>> rule;  // (evals, chance)
  std::string note;
};
SpecStallDefault InferStallRule(const nlohmann::json& base);

struct Spec {
  std::string name;
  std::string description;
  nlohmann::json base = nlohmann::json::object();
  std::vector<Axis> axes;  // `axes` entries first (written order), then `zip` groups
  RandomSamples random;
  std::vector<Constraint> constraints;
  std::vector<long long> seeds{1};
  long long max_runs = 1000;
  // The opt-in stall rule (docs/spec.md "Stall rule"): a run whose last `evals` evaluations of
  // its target metric were all at `chance` or worse is stopped and recorded as stalled.
  struct StallRule {
    int evals = 0;
    double chance = 0;
  };
  std::optional<StallRule> stall;
  // How `stall` was set when the spec has no "stall" object: on by default for a study with a
  // target whose chance level is known (InferStallRule), else off; "stall": false turns it off.
  // One sentence for `sweep plan`/`sweep run` (empty when the spec gave the rule).
  std::string stall_note;
  bool prune = true;   // stop runs that can no longer change the best steps to target (pruning.h)
  LrSearch lr_search;  // adaptive LR search per batch size (its coarse grid is the last axis)
  BranchStudy branch;  // a branch study: every run is a trunk with branches (branch_study.h)
  Resources resources;
  LaunchSettings launch;
  SlurmSettings slurm;
  nlohmann::json canonical;  // the whole spec, keys sorted: what spec_hash covers
  std::string spec_hash;     // 16 hex digits (see run_identity.h)
  // Some run names a `program` of its own (base or a swept path): `model`/`data` are free-form
  // at parse time and checked per resolved config for the built-in runner's runs.
  bool user_program = false;
  std::string source_dir;  // the spec file's folder (relative program paths start there)
};

// Parses and validates spec text; `source` (usually the file name) prefixes every error.
StatusOr<Spec> ParseSpec(const std::string& text, const std::string& source);

// Reads and parses a spec file (NOT_FOUND if it cannot be read).
StatusOr<Spec> LoadSpecFile(const std::string& path);

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_SPEC_SPEC_H_
