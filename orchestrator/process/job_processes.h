// Finding and stopping every process of a local job, not only `mpirun`'s process group: Open MPI
// 4.1 puts each rank in a process group of its own, and a user's program may start processes of
// its own. A job is started as a session of its own (setsid), and every process of it carries the
// variable BATCHLAB_ATTEMPT_DIR=<its attempt folder> in its environment (inherited by the ranks
// and whatever they start). A job's processes are those of its session, or any process whose
// environment carries its tag: found in /proc, so an orchestrator that starts after a `kill -9`
// of the previous one still finds an earlier attempt's ranks, reparented to init.
//
//   JobProcesses job{.session = mpirun_pid, .tag = attempt_dir};
//   job.Signal(SIGTERM);                          // every process of the job, now
//   job.Stop(std::chrono::seconds(5));            // SIGTERM, wait, then SIGKILL what is left
//   bool gone = job.List().empty();
#ifndef BATCHLAB_ORCHESTRATOR_PROCESS_JOB_PROCESSES_H_
#define BATCHLAB_ORCHESTRATOR_PROCESS_JOB_PROCESSES_H_

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "base/launched_process.h"

namespace batchlab::orchestrator {

using batchlab::kAttemptDirVariable;  // BATCHLAB_ATTEMPT_DIR (base/launched_process.h)

struct JobProcesses {
  pid_t session = 0;  // the job's session id (its first process's pid); 0: match by tag only
  std::string tag;    // the attempt folder; empty: match by session only

  // Live processes of the job (zombies excluded), never this process.
  std::vector<pid_t> List() const;
  // Sends `sig` to each of them; returns how many were signalled.
  int Signal(int sig) const;
  // SIGTERM to all, then waits up to `grace` for them to exit, then SIGKILL to what is left (and
  // to anything they started meanwhile). Returns true if none is left.
  bool Stop(std::chrono::milliseconds grace) const;
};

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_PROCESS_JOB_PROCESSES_H_
