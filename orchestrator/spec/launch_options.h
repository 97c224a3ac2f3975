// The launch options a spec may pass on (docs/spec.md, "Launch options"): `launch.mpirun_args`,
// `launch.env` and `slurm.sbatch_args` are checked against allow-lists of what cannot break a
// run's contract (one program, its rank count, its attempt folder, this machine or the Slurm
// allocation). Anything else is refused with the JSON path of the offending element:
//
//   CheckMpirunArgs({"--mca", "btl", "self,vader"}, "launch.mpirun_args");          // OK
//   CheckMpirunArgs({"--report-pid", "/tmp/x"}, "launch.mpirun_args");
//   // -> launch.mpirun_args[0]: "--report-pid" writes files outside the attempt folder ...
#ifndef BATCHLAB_ORCHESTRATOR_SPEC_LAUNCH_OPTIONS_H_
#define BATCHLAB_ORCHESTRATOR_SPEC_LAUNCH_OPTIONS_H_

#include <map>
#include <string>
#include <vector>

#include "base/status.h"

namespace batchlab::orchestrator {

Status CheckMpirunArgs(const std::vector<std::string>& args, const std::string& where);
Status CheckSbatchArgs(const std::vector<std::string>& args, const std::string& where);

// Names are [A-Za-z_][A-Za-z0-9_]* (so never empty, no '=', newline or NUL); values have no NUL.
Status CheckEnvironment(const std::map<std::string, std::string>& env, const std::string& where);

// The allow-lists as text, for messages and docs.
std::string MpirunAllowList();
std::string SbatchAllowList();

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_SPEC_LAUNCH_OPTIONS_H_
