#include "runner/train/worker_loop.h"
#include "base/run_protocol.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/atomic_file.h"

namespace batchlab::runner {
namespace {

bool Exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

void FlushAll() {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(stdout);
  std::fflush(stderr);
}

// Points fds 1 and 2 at the attempt's logs for one run, and back at the worker's own afterwards.
class RunOutput {
 public:
  RunOutput() : saved_out_(::dup(1)), saved_err_(::dup(2)) {}
  ~RunOutput() {
    ::close(saved_out_);
    ::close(saved_err_);
  }
  RunOutput(const RunOutput&) = delete;
  RunOutput& operator=(const RunOutput&) = delete;

  void To(const std::string& dir) {
    FlushAll();
    Redirect(protocol::StdoutPath(dir), 1);
    Redirect(protocol::StderrPath(dir), 2);
  }
  void Back() {
    FlushAll();
    ::dup2(saved_out_, 1);
    ::dup2(saved_err_, 2);
  }

 private:
  static void Redirect(const std::string& path, int fd) {
    const int f = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (f < 0) return;  // a full or vanished folder: the output stays in the worker's log
    ::dup2(f, fd);
    ::close(f);
  }
  int saved_out_, saved_err_;
};

// Writes `text` to `path` through a temporary of this process's own (the ranks of a job share the
// folder) and a rename: the orchestrator reads all of it or nothing.
bool Publish(const std::string& path, const std::string& text) {
  AtomicWrite how;
  how.unique_temp = true;
  return WriteFileAtomically(path, text, how).ok();
}

}  // namespace

int RunWorkerLoop(const std::string& dir, int rank,
                  const std::function<int(const std::string& config_path)>& run_config,
                  const WorkerLoopOptions& options) {
  if (!Publish(protocol::WorkerReadyPath(dir, rank), std::to_string(::getpid()) + "\n")) {
    std::cerr << "batchlab-runner[rank " << rank << "]: --worker: cannot write in " << dir << "\n";
    return 1;
  }
  const pid_t parent = ::getppid();
  RunOutput output;
  for (int n = 1;; ++n) {
    const std::string job = protocol::WorkerJobPath(dir, n);
    while (!Exists(job)) {
      if (Exists(protocol::WorkerQuitPath(dir))) return 0;
      if (::getppid() != parent) return 1;  // mpirun is gone: nobody will send a job
      std::this_thread::sleep_for(options.poll);
    }
    std::string config_path;
    {
      std::ifstream in(job);
      const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
      if (j.is_object() && j.contains("config") && j["config"].is_string()) {
        config_path = j["config"].get<std::string>();
      }
    }
    int code = 2;
    const std::string attempt_dir = std::filesystem::path(config_path).parent_path().string();
    if (config_path.empty() || ::chdir(attempt_dir.c_str()) != 0) {
      std::cerr << "batchlab-runner[rank " << rank << "]: --worker: bad job file " << job << "\n";
    } else {
      output.To(attempt_dir);
      code = run_config(config_path);
      output.Back();
      if (::chdir(dir.c_str()) != 0) code = code == 0 ? 1 : code;
    }
    if (!Publish(protocol::WorkerDonePath(dir, n, rank), std::to_string(code) + "\n")) {
      return 1;  // the orchestrator could not learn the outcome: end, so it sees the worker die
    }
    if (!protocol::IsFinalExitCode(code)) return code;
  }
}

}  // namespace batchlab::runner
