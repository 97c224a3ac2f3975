// A job's stderr on its way to the attempt's stderr.log, without mpirun's notice that a rank
// "returned a non-zero exit code" when that code is one of the protocol's outcomes (3 target
// reached, 4 diverged, 5 budget exhausted, 6 pruned): a successful run's log then holds only what
// its program wrote. Every other line, and the notice of a run that failed, is kept as written.
//
//   int fds[2]; pipe2(fds, O_CLOEXEC);      // the child's stderr is fds[1]
//   StderrCopier copier(fds[0], dir + "/stderr.log");
//   ... the job ends with `code` ...
//   copier.Finish(StateForExitCode(code) != RunState::kFailed);
#ifndef BATCHLAB_ORCHESTRATOR_PROCESS_STDERR_COPIER_H_
#define BATCHLAB_ORCHESTRATOR_PROCESS_STDERR_COPIER_H_

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace batchlab::orchestrator {

// The filtering, apart from any file or thread. Text goes in as it arrives; what may be written
// comes out. mpirun frames each notice between lines of dashes: a framed block that is the
// non-zero-exit notice is held back until Finish says whether the job's code was a protocol
// outcome (dropped) or a failure (written); any other block is written once complete.
class MpirunNoticeFilter {
 public:
  std::string Feed(std::string_view text);
  std::string Finish(bool drop_exit_notices);

 private:
  std::string Line(std::string line);  // one complete line (with its '\n'); returns what to write
  std::string partial_;                // a line not ended yet
  std::string block_;                  // a framed block being read (from its opening rule)
  bool in_block_ = false;
  std::string held_;                   // complete non-zero-exit notices
};

// Copies everything read from `fd` (which it owns) into the file at `path`, through a
// MpirunNoticeFilter, on a thread of its own.
class StderrCopier {
 public:
  StderrCopier(int fd, const std::string& path);
  ~StderrCopier();  // Finish(false) if not finished
  StderrCopier(const StderrCopier&) = delete;
  StderrCopier& operator=(const StderrCopier&) = delete;

  // Called once the job ended: reads what is left (until the pipe closes, or 0.5 s after data
  // stops when some stray process still holds it), writes the held notices unless
  // `drop_exit_notices`, and closes the file.
  void Finish(bool drop_exit_notices);

 private:
  void Copy();
  int fd_;
  std::FILE* file_;
  MpirunNoticeFilter filter_;
  std::mutex mu_;  // filter_ and file_
  std::atomic<bool> ending_{false};
  bool finished_ = false;
  std::thread thread_;
};

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_PROCESS_STDERR_COPIER_H_
