// Waiting and process checks shared by the orchestrator's end-to-end tests: wait for a condition
// without asserting on timing, read the pid files fake_runner writes, and tell whether a process
// is still alive (a zombie is not: this container's init does not reap orphans).
//
//   ASSERT_TRUE(WaitFor([&] { return PidsIn(pid_dir).size() >= 2; }, 60));
//   EXPECT_TRUE(WaitFor([&] { return AllGone(pids); }, 30));
#ifndef BATCHLAB_TESTS_ORCHESTRATOR_END_TO_END_PROCESS_CHECKS_H_
#define BATCHLAB_TESTS_ORCHESTRATOR_END_TO_END_PROCESS_CHECKS_H_

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

namespace batchlab::testing {

// Waits (up to `seconds`) for `pred`; returns its last value. Never asserts on timing itself.
template <typename Pred>
bool WaitFor(Pred pred, double seconds) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return pred();
}

// The pids in the *.pid files of `dir` whose name contains `part` (fake_runner's pid files).
inline std::vector<pid_t> PidsIn(const std::string& dir, const std::string& part = "") {
  std::vector<pid_t> pids;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename().string().find(part) == std::string::npos) continue;
    std::ifstream in(it->path());
    pid_t pid = 0;
    if (in >> pid) pids.push_back(pid);
  }
  return pids;
}

// True if `pid` runs (exists and is not a zombie).
inline bool Alive(pid_t pid) {
  if (kill(pid, 0) != 0) return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  return paren == std::string::npos || paren + 2 >= text.size() || text[paren + 2] != 'Z';
}

inline bool AllGone(const std::vector<pid_t>& pids) {
  for (pid_t p : pids) {
    if (Alive(p)) return false;
  }
  return true;
}

}  // namespace batchlab::testing

#endif  // BATCHLAB_TESTS_ORCHESTRATOR_END_TO_END_PROCESS_CHECKS_H_
