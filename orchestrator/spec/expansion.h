// Expansion: a validated Spec becomes the list of runs it describes. Grid axes are crossed in
// written order (the first varies slowest), zipped groups advance together, random draws are
// crossed with the grid, seeds vary fastest. Each point gets its resolved config (defaults <-
// base <- swept values, then derived values), the constraints drop points, and each surviving
// run gets its id (run_identity.h).
//
//   BATCHLAB_ASSIGN_OR_RETURN(Plan plan, ExpandSpec(spec, {}));
//   for (const PlannedRun& r : plan.runs) Launch(r.config, r.slots);
//
// A run with a `program` gets it resolved (program.h: its command checked on disk, relative to
// spec.source_dir); a run without one is the built-in runner's and gets its model/data defaults.
//
// A batch size that does not divide by world_size x accumulation is an error naming the spec
// field it came from (add a constraint to drop such points instead).
#ifndef BATCHLAB_ORCHESTRATOR_SPEC_EXPANSION_H_
#define BATCHLAB_ORCHESTRATOR_SPEC_EXPANSION_H_

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "orchestrator/spec/program.h"
#include "orchestrator/spec/spec.h"

namespace batchlab::orchestrator {

struct PlannedRun {
  int ordinal = 0;  // position in the expansion, after constraints
  std::string id;
  // The resolved config (docs/protocol.md) with run_id; attempt and metrics_path are added
  // per attempt at launch.
  nlohmann::json config;
  std::map<std::string, std::string> params;   // swept path -> JSON text; always has "seed"
  std::map<std::string, std::string> sources;  // swept path -> spec JSON path ("axes.x[1]")
  int world_size = 1;
  int slots = 1;                // world_size x slots_per_rank: cores the run occupies
  int gpus_per_rank = 0;        // resources.gpus_per_rank
  int gpus = 0;                 // world_size x gpus_per_rank: GPUs the run occupies (gpu_slots.h)
  double expected_seconds = 1;  // for longest-first packing and the first ETA
  double scaled_lr = 0;         // lr.base scaled by lr.rule at batch_size (display only)
  Program program;              // what runs it: the built-in runner or the user's program
  // A branch of a branch study (branch_study.h): its trunk's run id and the trunk step of the
  // checkpoint it starts from; it is launched once that checkpoint exists. Empty: not a branch.
  std::string trunk_id;
  long long branch_step = 0;
};

struct Plan {
  std::vector<PlannedRun> runs;
  long long points = 0;                                    // before constraints and de-duplication
  std::vector<std::pair<std::string, long long>> dropped;  // constraint label -> points dropped
  long long duplicates = 0;                                // points identical to an earlier one
};

struct ExpandOptions {
  std::optional<long long> max_runs;  // overrides the spec's max_runs (CLI --max-runs)
  // A target its metric can never meet (base/target_range.h: test_accuracy >= 80) is an error
  // naming the field, unless this is set (CLI --force).
  bool allow_unreachable_target = false;
};

StatusOr<Plan> ExpandSpec(const Spec& spec, const ExpandOptions& options);

// `run` with the swept `path` set to `value` (the LR search's later rounds, lr_search.h): a new
// id, params[path] and scaled LR to match, and `ordinal`. Constraints are not re-checked.
PlannedRun WithSweptValue(const PlannedRun& run, const std::string& path,
                          const nlohmann::json& value, int ordinal);

// A run's swept values as text, in name order, `separator` between them: "batch_size=256, seed=1"
// with the default (in a sentence: expansion and validation errors), "batch_size=256 seed=1"
// with " " (the executor's progress lines, the `sweep plan` table).
std::string ParamsText(const std::map<std::string, std::string>& params,
                       const std::string& separator = ", ");

// Reads a dotted path of a JSON object (nullptr if absent).
const nlohmann::json* FindPath(const nlohmann::json& object, const std::string& dotted_path);
// Sets a dotted path, creating intermediate objects.
void SetPath(nlohmann::json& object, const std::string& dotted_path, nlohmann::json value);

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_SPEC_EXPANSION_H_
