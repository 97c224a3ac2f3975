// One orchestrator per sweep at a time: an exclusive flock(2) on <runs-dir>/<sweep>/.lock.
// The kernel drops the lock when the holder dies (even by kill -9), so a resumed sweep never
// waits for a stale lock, and two concurrent `sweep run` of the same sweep cannot both launch.
//
//   BATCHLAB_ASSIGN_OR_RETURN(SweepLock lock, SweepLock::Acquire(runs_dir + "/quickstart"));
#ifndef BATCHLAB_ORCHESTRATOR_SWEEP_LOCK_H_
#define BATCHLAB_ORCHESTRATOR_SWEEP_LOCK_H_

#include <string>

#include "base/status.h"

namespace batchlab::orchestrator {

class SweepLock {
 public:
  // Creates `dir` if needed. FAILED_PRECONDITION if another process holds the lock.
  static StatusOr<SweepLock> Acquire(const std::string& dir);
  SweepLock(SweepLock&& other) noexcept;
  SweepLock& operator=(SweepLock&& other) noexcept;
  SweepLock(const SweepLock&) = delete;
  SweepLock& operator=(const SweepLock&) = delete;
  ~SweepLock();

 private:
  explicit SweepLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_SWEEP_LOCK_H_
