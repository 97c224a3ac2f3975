// Every resolved config of a plan is validated by its program before anything launches, so an
// invalid value in any axis position (precision "fp16" on a CPU runner, an idx dataset without
// data.path, a folder that does not exist) exits 2 naming its spec JSON path instead of being
// launched, failing and retried. One built-in runner start for the whole plan: the distinct configs
// (ignoring run_id and seed, which the runner does not judge) go to
// `batchlab-runner --validate-batch FILE` as JSON Lines (docs/protocol.md).
//
// A user program with "validate": true is asked about each distinct config.
//
//   BATCHLAB_RETURN_IF_ERROR(ValidateResolvedConfigs(plan.runs, tools, spec.launch.env));
//   // -> INVALID_ARGUMENT "axes.precision[1]: the run with precision=\"fp16\", seed=1 is
//   //    rejected by batchlab-runner: precision: \"fp16\" needs a CUDA device ..."
#ifndef BATCHLAB_ORCHESTRATOR_SPEC_CONFIG_VALIDATION_H_
#define BATCHLAB_ORCHESTRATOR_SPEC_CONFIG_VALIDATION_H_

#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "orchestrator/spec/expansion.h"
#include "orchestrator/spec/program.h"

namespace batchlab::orchestrator {

// The built-in runner's runs of `runs` (others are skipped). `env` is added to the runner's
// environment (the spec's launch.env: the runner validates under the environment it will run in). A
// runner that cannot start or fails otherwise is UNAVAILABLE.
Status ValidateRunsWithRunner(const std::string& runner, const std::vector<PlannedRun>& runs,
                              const std::map<std::string, std::string>& env);

// Every resolved config of `runs` judged by the program that will run it, before anything
// launches: the built-in runner's runs in one `tools.runner --validate-batch` (skipped when
// tools.runner is empty: `sweep plan` without a runner), and a user program with
// `"validate": true` asked `--validate --config FILE` once per distinct config (program.h);
// user programs without it are not asked, nor any user program when `ask_user_programs` is false
// (`sweep plan` starts no program unless --validate). The first rejection is INVALID_ARGUMENT naming the
// spec JSON path, the run's swept values and the program's message.
Status ValidateResolvedConfigs(const std::vector<PlannedRun>& runs, const LaunchTools& tools,
                               const std::map<std::string, std::string>& env,
                               bool ask_user_programs = true);

// The spec JSON path a config field of `run` came from: the axis position that swept it (or
// an enclosing object), else base.<field>.
std::string SpecPathOfField(const PlannedRun& run, const std::string& field);

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_SPEC_CONFIG_VALIDATION_H_
