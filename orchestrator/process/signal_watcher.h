// Turns SIGINT, SIGTERM and SIGHUP into a flag the sweep executor polls, so a Ctrl-C stops the children
// cleanly (their runs are marked cancelled) instead of killing the orchestrator mid-transaction.
// RAII: the previous handlers are restored when the watcher goes away. A second signal while
// the first is being handled leaves the flag set (the executor escalates to SIGKILL on its own
// after its grace period).
//
//   SignalWatcher watcher;
//   while (...) { if (watcher.requested()) StopEverything(); }
#ifndef BATCHLAB_ORCHESTRATOR_PROCESS_SIGNAL_WATCHER_H_
#define BATCHLAB_ORCHESTRATOR_PROCESS_SIGNAL_WATCHER_H_

#include <signal.h>

namespace batchlab::orchestrator {

class SignalWatcher {
 public:
  SignalWatcher();
  ~SignalWatcher();
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

  bool requested() const;
  int signal_number() const;  // the first signal received (0 if none)

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
  struct sigaction old_hup_ {};
};

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_PROCESS_SIGNAL_WATCHER_H_
