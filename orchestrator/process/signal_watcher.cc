#include "orchestrator/process/signal_watcher.h"

#include <csignal>

namespace batchlab::orchestrator {
namespace {

volatile std::sig_atomic_t g_signal = 0;

extern "C" void OnStopSignal(int sig) {
  if (g_signal == 0) g_signal = sig;
}

}  // namespace

SignalWatcher::SignalWatcher() {
  g_signal = 0;
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  sigaction(SIGINT, &sa, &old_int_);
  sigaction(SIGTERM, &sa, &old_term_);
  sigaction(SIGHUP, &sa, &old_hup_);  // the terminal went away: stop as cleanly as on Ctrl-C
}

SignalWatcher::~SignalWatcher() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
  sigaction(SIGHUP, &old_hup_, nullptr);
}

bool SignalWatcher::requested() const { return g_signal != 0; }
int SignalWatcher::signal_number() const { return g_signal; }

}  // namespace batchlab::orchestrator
