// Runs a short helper command (sbatch, scontrol, scancel, batchlab-runner --validate) from an
// argument vector (never a shell string) and captures its exit code, stdout and stderr.
//
//   BATCHLAB_ASSIGN_OR_RETURN(CommandResult r, RunCapturedCommand({"scontrol", "show", "job",
//   id})); if (r.exit_code == 0) Parse(r.out);
#ifndef BATCHLAB_ORCHESTRATOR_PROCESS_CAPTURED_COMMAND_H_
#define BATCHLAB_ORCHESTRATOR_PROCESS_CAPTURED_COMMAND_H_

#include <map>
#include <string>
#include <vector>

#include "base/status.h"

namespace batchlab::orchestrator {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// argv[0] is looked up in PATH unless it contains a '/'. `env` is added to the current
// environment; `workdir` ("" = the current directory) is where it runs. UNAVAILABLE if the
// program cannot be started.
StatusOr<CommandResult> RunCapturedCommand(const std::vector<std::string>& argv,
                                           const std::map<std::string, std::string>& env = {},
                                           const std::string& workdir = "");

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_PROCESS_CAPTURED_COMMAND_H_
