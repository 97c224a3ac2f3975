// A process of a batchlab job (a rank, or the program a rank runs) ends with the launcher that
// started it. The local launcher tags every process of a job with BATCHLAB_ATTEMPT_DIR (found
// again through /proc after a crash, orchestrator/process/job_processes.h) and has the job's first
// process (mpirun) get SIGTERM when the orchestrator dies; mpirun, however, may exit on that
// SIGTERM without stopping its ranks (Open MPI 4.1 whose stderr pipe has no reader), which then
// train on unwatched. So each tagged process also asks for SIGTERM when its own parent dies:
// the runner checkpoints and exits 7 (preempted), a program without a handler ends.
//
//   int main() { batchlab::EndWithLauncher(); ... }
//
// Header only: the runner (LibTorch), batchlab-rank and the test runners include it.
#ifndef BATCHLAB_BASE_LAUNCHED_PROCESS_H_
#define BATCHLAB_BASE_LAUNCHED_PROCESS_H_

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdlib>

namespace batchlab {

// The environment variable that tags every process of a job with its attempt folder.
inline constexpr const char* kAttemptDirVariable = "BATCHLAB_ATTEMPT_DIR";

// SIGTERM to this process when its parent dies, if it is part of a batchlab job (tagged);
// a parent already gone before the request (the race prctl(2) describes) sends it at once.
inline void EndWithLauncher() {
  if (std::getenv(kAttemptDirVariable) == nullptr) return;
  const pid_t parent = getppid();
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent || parent == 1) raise(SIGTERM);
}

}  // namespace batchlab

#endif  // BATCHLAB_BASE_LAUNCHED_PROCESS_H_
