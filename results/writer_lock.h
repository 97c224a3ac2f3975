// One writer per results database: an exclusive flock(2) on `<database>.lock`, taken by
// Store::Open before the database file is created or touched and held for the Store's lifetime.
// The lock belongs to the database, not to a runs folder or a sweep: two `batchlab sweep run`
// on one database (any sweep, any --runs-dir) never both write it. The kernel drops the lock when
// its holder dies (even by kill -9), so a resumed sweep never waits for a stale lock. The holder
// writes its pid into the file, which the refusal quotes.
//
//   BATCHLAB_ASSIGN_OR_RETURN(WriterLock lock, WriterLock::Acquire("batchlab.db"));
#ifndef BATCHLAB_RESULTS_WRITER_LOCK_H_
#define BATCHLAB_RESULTS_WRITER_LOCK_H_

#include <string>

#include "base/status.h"

namespace batchlab::results {

class WriterLock {
 public:
  // FAILED_PRECONDITION if another process holds the lock of `database_path`.
  static StatusOr<WriterLock> Acquire(const std::string& database_path);
  static std::string LockPath(const std::string& database_path) { return database_path + ".lock"; }

  WriterLock(WriterLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  WriterLock& operator=(WriterLock&& other) noexcept;
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;
  ~WriterLock();

 private:
  explicit WriterLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace batchlab::results

#endif  // BATCHLAB_RESULTS_WRITER_LOCK_H_
