// batchlab-rank: starts one rank of a user program (docs/byo-program.md) with the environment
// torch.distributed expects, then becomes that program (exec). With --spawn K it is a minimal
// torchrun: it starts K ranks on this machine, forwards SIGINT/SIGTERM/SIGHUP to them, stops the
// others as soon as one fails, and exits with the job's code (rank_environment.h: JobExitCode).
//
//   mpirun -np 2 batchlab-rank -- /usr/bin/python3 train.py --config F
//   batchlab-rank --spawn 2 -- /usr/bin/python3 train.py --config F
//
// Exit codes: the program's own (exec), 2 for a bad command line, 127 when the program cannot be
// started.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/launched_process.h"
#include "base/run_protocol.h"
#include "orchestrator/launch/rank_environment.h"

namespace {

namespace orch = batchlab::orchestrator;

volatile sig_atomic_t g_signal = 0;
void OnSignal(int sig) { g_signal = sig; }

const char* Env(const char* name) { return std::getenv(name); }

void SetAll(const std::map<std::string, std::string>& vars) {
  for (const auto& [k, v] : vars) setenv(k.c_str(), v.c_str(), /*overwrite=*/1);
}

[[noreturn]] void Exec(const std::vector<std::string>& command) {
  std::vector<char*> argv;
  for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  std::fprintf(stderr, "batchlab-rank: cannot start %s: %s\n", argv[0], std::strerror(errno));
  _exit(127);
}

int RunOne(const std::vector<std::string>& command) {
  std::optional<orch::RankPlace> place = orch::RankPlaceFromLauncher(Env);
  if (!place) place = orch::RankPlace{};  // started alone: rank 0 of 1
  SetAll(orch::TorchEnvironment(*place, Env));
  batchlab::EndWithLauncher();  // kept across exec: the program ends with its launcher
  Exec(command);
}

int Spawn(int world, const std::vector<std::string>& command) {
  batchlab::EndWithLauncher();  // and its ranks with it (PR_SET_PDEATHSIG below)
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
  std::map<pid_t, int> rank_of;
  for (int r = 0; r < world; ++r) {
    pid_t pid = fork();
    if (pid < 0) {
      std::perror("batchlab-rank: fork");
      for (const auto& [p, rank] : rank_of) kill(p, SIGKILL);
      return 1;
    }
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the spawner
      orch::RankPlace place{r, world, r, world};
      SetAll(orch::TorchEnvironment(place, Env));
      Exec(command);
    }
    rank_of[pid] = r;
  }
  std::map<int, int> codes;
  bool stopping = false;
  auto stop_at = std::chrono::steady_clock::time_point::max();
  while (codes.size() < static_cast<size_t>(world)) {
    if (g_signal != 0 && !stopping) {
      stopping = true;
      for (const auto& [p, r] : rank_of) {
        if (!codes.count(r)) kill(p, g_signal);
      }
      stop_at = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    }
    if (stopping && std::chrono::steady_clock::now() > stop_at) {
      for (const auto& [p, r] : rank_of) {
        if (!codes.count(r)) kill(p, SIGKILL);
      }
    }
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    auto it = rank_of.find(pid);
    if (it == rank_of.end()) continue;
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    codes[it->second] = code;
    const bool failed = !batchlab::protocol::IsFinalExitCode(code);
    if (failed && !stopping) {
      // One rank failed: the others may wait for it in a collective forever.
      stopping = true;
      for (const auto& [p, r] : rank_of) {
        if (!codes.count(r)) kill(p, SIGTERM);
      }
      stop_at = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    }
  }
  return orch::JobExitCode(codes);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "batchlab-rank: runs one rank of a user program with RANK, WORLD_SIZE, LOCAL_RANK, "
      "LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT set (from mpirun's or Slurm's variables), "
      "or with --spawn K starts K local ranks itself"};
  int spawn = 0;
  std::vector<std::string> command;
  app.add_option("--spawn", spawn, "start this many ranks on this machine (torchrun-style)")
      ->check(CLI::Range(1, 4096));
  app.add_option("command", command, "the program and its arguments (after --)")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  if (spawn > 0) return Spawn(spawn, command);
  return RunOne(command);
}
