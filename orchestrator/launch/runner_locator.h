// Finds the batchlab-runner executable a sweep launches, in this order:
//   1. --runner PATH (the CLI flag),
//   2. the BATCHLAB_RUNNER environment variable,
//   3. the build tree next to the running `batchlab`: <build>/runner/batchlab-runner when
//      `batchlab` is <build>/cli/batchlab (i.e. ../runner/ relative to its directory), or a
//      batchlab-runner in the same directory as `batchlab`,
//   4. PATH.
//
//   BATCHLAB_ASSIGN_OR_RETURN(std::string runner, LocateRunner(flag_value));
#ifndef BATCHLAB_ORCHESTRATOR_LAUNCH_RUNNER_LOCATOR_H_
#define BATCHLAB_ORCHESTRATOR_LAUNCH_RUNNER_LOCATOR_H_

#include <string>

#include "base/status.h"

namespace batchlab::orchestrator {

// An absolute path to an executable batchlab-runner, or NOT_FOUND listing where it looked.
// `flag` is the --runner value ("" if not given); `self_exe` defaults to SelfExecutable()
// (base/self_executable.h).
StatusOr<std::string> LocateRunner(const std::string& flag, const std::string& self_exe = "");

// An absolute path to batchlab-rank (program.h): next to the running `batchlab`, then PATH.
StatusOr<std::string> LocateRankExec(const std::string& self_exe = "");

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_LAUNCH_RUNNER_LOCATOR_H_
