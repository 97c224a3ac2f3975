// Every process of a local job, found in /proc; see job_processes.h.
#include "orchestrator/process/job_processes.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <thread>

namespace batchlab::orchestrator {
namespace {

struct Stat {
  char state = '?';
  pid_t session = 0;
};

// State and session of `pid` from /proc/<pid>/stat (the fields after the command's last ')').
bool ReadStat(pid_t pid, Stat* out) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  if (paren == std::string::npos || paren + 2 >= text.size()) return false;
  // ") S ppid pgrp session ..."
  char* p = text.data() + paren + 2;
  out->state = *p;
  char* end = nullptr;
  std::strtol(p + 1, &end, 10);          // ppid
  std::strtol(end, &end, 10);            // pgrp
  out->session = static_cast<pid_t>(std::strtol(end, &end, 10));
  return true;
}

bool HasTag(pid_t pid, const std::string& entry) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  std::string env((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (size_t start = 0; start < env.size();) {
    size_t end = env.find('\0', start);
    if (end == std::string::npos) end = env.size();
    if (env.compare(start, end - start, entry) == 0) return true;
    start = end + 1;
  }
  return false;
}

}  // namespace

std::vector<pid_t> JobProcesses::List() const {
  std::vector<pid_t> out;
  if (session <= 0 && tag.empty()) return out;
  const std::string entry = std::string(kAttemptDirVariable) + "=" + tag;
  const pid_t self = getpid();
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return out;
  while (dirent* e = readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || pid <= 0 || pid == self) continue;
    Stat st;
    if (!ReadStat(static_cast<pid_t>(pid), &st) || st.state == 'Z' || st.state == 'X') continue;
    const bool in_session = session > 0 && st.session == session;
    if (in_session || (!tag.empty() && HasTag(static_cast<pid_t>(pid), entry))) {
      out.push_back(static_cast<pid_t>(pid));
    }
  }
  closedir(proc);
  return out;
}

int JobProcesses::Signal(int sig) const {
  int n = 0;
  for (pid_t pid : List()) n += kill(pid, sig) == 0 ? 1 : 0;
  return n;
}

bool JobProcesses::Stop(std::chrono::milliseconds grace) const {
  if (Signal(SIGTERM) == 0) return true;
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline) {
    if (List().empty()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // Twice: a process may have forked between the listing and the signal.
  for (int round = 0; round < 2; ++round) Signal(SIGKILL);
  for (int i = 0; i < 50; ++i) {
    if (List().empty()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace batchlab::orchestrator
