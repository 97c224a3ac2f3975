// The training program a run launches: the built-in batchlab-runner (no `program` in the
// config), or the user's own program named by the config's `program` object (docs/spec.md,
// "Bring your own program"; docs/byo-program.md):
//
//   "program": {"command": ["/usr/bin/python3", "train.py"], "launch": "mpirun",
//               "validate": false, "workdir": "."}
//
// Every rank of a user program runs `command... --config FILE` in `workdir` with BATCHLAB_CONFIG,
// RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT set, through the
// `batchlab-rank` wrapper (rank_environment.h): under mpirun it maps Open MPI's rank variables
// and execs the program; with `"launch": "torchrun"` it spawns the ranks itself.
//
//   BATCHLAB_ASSIGN_OR_RETURN(Program p, ResolveProgram(run.config, spec.source_dir));
//   std::vector<std::string> argv = RankCommand(p, tools, "/runs/s/id/attempt-1/config.json");
#ifndef BATCHLAB_ORCHESTRATOR_SPEC_PROGRAM_H_
#define BATCHLAB_ORCHESTRATOR_SPEC_PROGRAM_H_

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace batchlab::orchestrator {

enum class LaunchMode {
  kMpirun,    // mpirun -np K ... <rank command>
  kTorchrun,  // batchlab-rank --spawn K (local) / srun (Slurm): one process per rank, env only
};

struct Program {
  bool builtin = true;               // the built-in batchlab-runner
  std::vector<std::string> command;  // user program: argv, command[0] absolute
  LaunchMode launch = LaunchMode::kMpirun;
  bool validate = false;  // the program answers `--validate --config FILE` with exit 0 or 2
  std::string workdir;    // absolute; "" for the built-in runner (it runs in the attempt folder)
};

// The executables a launch needs: batchlab-runner and the batchlab-rank wrapper.
struct LaunchTools {
  std::string runner;     // batchlab-runner (runner_locator.h)
  std::string rank_exec;  // batchlab-rank (needed only by user programs)
};

// Reads `program` from a resolved config. A relative `workdir` is taken from `spec_dir`;
// command[0] with a '/' is taken from the workdir, without one it is looked up in PATH. Errors
// (INVALID_ARGUMENT) name `where` + ".command[0]" etc. and say how to fix it: a program that does
// not exist or is not executable, an empty command.
StatusOr<Program> ResolveProgram(const nlohmann::json& config, const std::string& spec_dir,
                                 const std::string& where = "program");

// The command line of one rank, without the launcher in front of it (mpirun, srun):
//   built-in:  runner --config FILE
//   user:      batchlab-rank -- command... --config FILE
// For a torchrun-style local launch, SpawnCommand() is the whole job's command instead.
std::vector<std::string> RankCommand(const Program& program, const LaunchTools& tools,
                                     const std::string& config_path);

// batchlab-rank --spawn K -- command... --config FILE: the job's only process starts the ranks.
std::vector<std::string> SpawnCommand(const Program& program, const LaunchTools& tools,
                                      int world_size, const std::string& config_path);

// Environment of every rank of a user program (on top of the launch environment):
// BATCHLAB_CONFIG, MASTER_ADDR (127.0.0.1 unless given), MASTER_PORT.
std::map<std::string, std::string> ProgramEnvironment(const std::string& config_path,
                                                      const std::string& master_addr,
                                                      int master_port);

// A TCP port on 127.0.0.1 that nothing listens on now (the kernel's choice), avoiding `taken`.
StatusOr<int> FreeTcpPort(const std::vector<int>& taken = {});

// Runs `command --validate --config FILE` in `workdir` on a copy of `config` (with attempt and
// metrics_path filled in, in a temporary folder), with `env` and BATCHLAB_CONFIG added to the
// environment. Exit 0 accepts it; exit 2 becomes INVALID_ARGUMENT "<who> rejects the resolved
// config: <its message>"; any other exit UNAVAILABLE naming the command.
// Used for user programs with `validate: true` (config_validation.h; the built-in runner
// validates a whole plan at once with --validate-batch).
Status ValidateWithCommand(const std::vector<std::string>& command, const std::string& who,
                           const std::string& workdir, const nlohmann::json& config,
                           const std::map<std::string, std::string>& env = {});

// A regular file this process may execute.
bool IsExecutableFile(const std::string& path);

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_SPEC_PROGRAM_H_
