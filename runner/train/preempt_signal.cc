// SIGUSR2 / SIGTERM -> a flag (see preempt_signal.h).
#include "runner/train/preempt_signal.h"

#include <csignal>

#include "base/run_protocol.h"

namespace batchlab::runner {
namespace {

volatile std::sig_atomic_t g_signalled = 0;
volatile std::sig_atomic_t g_armed = 0;

extern "C" void OnPreemptSignal(int signal) {
  if (g_armed != 0) {
    g_signalled = 1;
    return;
  }
  std::signal(signal, SIG_DFL);  // not training: end as if there were no handler
  std::raise(signal);
}

}  // namespace

void InstallPreemptHandlers() {
  struct sigaction action = {};
  action.sa_handler = OnPreemptSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int signal : protocol::kPreemptSignals) sigaction(signal, &action, nullptr);
}

bool PreemptSignalled() { return g_signalled != 0; }

void ClearPreemptSignal() { g_signalled = 0; }

PreemptWindow::PreemptWindow() {
  g_signalled = 0;
  g_armed = 1;
}

PreemptWindow::~PreemptWindow() { g_armed = 0; }

}  // namespace batchlab::runner
