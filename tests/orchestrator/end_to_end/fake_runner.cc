// A stand-in for batchlab-runner at the runner/orchestrator seam (docs/protocol.md), so the
// orchestrator's launch, state, retry, timeout, cancel and resume logic is tested with real
// mpirun processes in milliseconds instead of LibTorch training. It honours the protocol: reads
// --config, rank 0 writes JSON lines with increasing seq to metrics_path, the `end` line only
// when it ends on its own terms, and the documented exit codes. Behaviour comes from the
// environment (set through the spec's launch.env):
//   FAKE_RUNNER_SECONDS=0.2        how long a run takes (steps spread over it)
//   FAKE_RUNNER_EXIT=0             exit code (0, 3, 4, 5 write an end line first)
//   FAKE_RUNNER_FAIL_ATTEMPTS=N    attempts 1..N exit 1 without an end line
//   FAKE_RUNNER_FAIL_BATCH=B       runs with batch_size B always exit 1
//   FAKE_RUNNER_PID_DIR=DIR        writes DIR/<run_id>-<attempt>-<rank>.pid while running
//   FAKE_RUNNER_ACCURACY=A         an eval line with test_accuracy A after every step
//   FAKE_RUNNER_HONOUR_STOP=1      the stop file beside the config ends the run as pruned
//                                  (end line, exit 6), as the runner does
// Faults, for the fault-injection tests (fault_injection_test.cc):
//   FAKE_RUNNER_SLOW_ATTEMPTS=N    only attempts 1..N take FAKE_RUNNER_SECONDS (later: 0.05 s)
//   FAKE_RUNNER_STEPS=N            step lines (default 5)
//   FAKE_RUNNER_PAD=BYTES          each step line carries a string field of BYTES bytes
//   FAKE_RUNNER_DETACH=1           each rank starts a process that leaves the job's session
//                                  (setsid) and sleeps 600 s; its pid goes to
//                                  DIR/<run_id>-<attempt>-<rank>-detached.pid (never removed)
//   FAKE_RUNNER_HANG_RANK=R        rank R ignores SIGTERM and every rank hangs (a collective
//                                  that never completes), before the end line
//   FAKE_RUNNER_MISBEHAVE=LIST     rank 0 writes, between its steps, each of: garbage (binary
//                                  bytes), truncated (a cut-off line), seq (seq jumps to 1000,
//                                  then goes on lower), nan (NaN/Infinity tokens), huge (a 2 MiB
//                                  line); end-hang: after the end line (written with a low seq),
//                                  it hangs instead of exiting
// `--validate --config FILE` exits 0 (2 if FAKE_RUNNER_INVALID is set); `--validate-batch FILE`
// (JSON Lines of configs) prints {"line", "error"} for each config it rejects and exits 2 if any:
// all of them if FAKE_RUNNER_INVALID is set, those with batch_size FAKE_RUNNER_INVALID_BATCH.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/elapsed.h"
#include "base/launched_process.h"

namespace {

double EnvDouble(const char* name, double fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atof(v) : fallback;
}

bool Misbehaves(const char* what) {
  const char* list = std::getenv("FAKE_RUNNER_MISBEHAVE");
  if (list == nullptr) return false;
  std::string l = std::string(",") + list + ",";
  return l.find(std::string(",") + what + ",") != std::string::npos;
}

void SleepForever() {
  while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
}

int ValidateBatch(const std::string& path) {
  std::ifstream in(path);
  const char* bad_batch = std::getenv("FAKE_RUNNER_INVALID_BATCH");
  std::string text;
  int invalid = 0;
  for (int line = 1; std::getline(in, text); ++line) {
    nlohmann::json config = nlohmann::json::parse(text, nullptr, false);
    std::string error;
    if (std::getenv("FAKE_RUNNER_INVALID") != nullptr) {
      error = "fake: FAKE_RUNNER_INVALID is set";
    } else if (bad_batch != nullptr && config.is_object() &&
               config.value("batch_size", -1) == std::atoi(bad_batch)) {
      error = "batch_size: " + std::string(bad_batch) + " is rejected (FAKE_RUNNER_INVALID_BATCH)";
    }
    if (!error.empty()) {
      ++invalid;
      std::printf("%s\n", nlohmann::json{{"line", line}, {"error", error}}.dump().c_str());
    }
  }
  return invalid > 0 ? 2 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  batchlab::EndWithLauncher();  // as the real runner does
  std::string config_path;
  bool validate = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--config" && i + 1 < argc) config_path = argv[++i];
    if (a == "--validate") validate = true;
    if (a == "--validate-batch" && i + 1 < argc) return ValidateBatch(argv[i + 1]);
  }
  std::ifstream in(config_path);
  if (!in) {
    std::fprintf(stderr, "fake-runner: cannot read --config %s\n", config_path.c_str());
    return 2;
  }
  nlohmann::json config = nlohmann::json::parse(in, nullptr, false);
  if (!config.is_object()) {
    std::fprintf(stderr, "fake-runner: config is not JSON\n");
    return 2;
  }
  if (validate) return std::getenv("FAKE_RUNNER_INVALID") != nullptr ? 2 : 0;
  const char* rank_env = std::getenv("OMPI_COMM_WORLD_RANK");
  const int rank = rank_env != nullptr ? std::atoi(rank_env) : 0;
  const std::string run_id = config.value("run_id", "?");
  const int attempt = config.value("attempt", 0);
  std::string pid_file;
  if (const char* dir = std::getenv("FAKE_RUNNER_PID_DIR"); dir != nullptr) {
    pid_file = std::string(dir) + "/" + run_id + "-" + std::to_string(attempt) + "-" +
               std::to_string(rank) + ".pid";
    std::ofstream(pid_file) << getpid() << "\n";
  }
  if (std::getenv("FAKE_RUNNER_DETACH") != nullptr && std::getenv("FAKE_RUNNER_PID_DIR") != nullptr) {
    const std::string detached_file = std::string(std::getenv("FAKE_RUNNER_PID_DIR")) + "/" +
                                      run_id + "-" + std::to_string(attempt) + "-" +
                                      std::to_string(rank) + "-detached.pid";
    if (fork() == 0) {
      setsid();  // out of the job's session: only its environment still names its attempt
      // A daemon's manners: let go of the rank's stdio (mpirun waits for those pipes to close).
      const int null_fd = open("/dev/null", O_RDWR);
      for (int fd = 0; fd <= 2; ++fd) dup2(null_fd, fd);
      std::ofstream(detached_file) << getpid() << "\n";
      std::this_thread::sleep_for(std::chrono::seconds(600));
      _exit(0);
    }
  }
  double seconds = EnvDouble("FAKE_RUNNER_SECONDS", 0.05);
  if (attempt > static_cast<int>(EnvDouble("FAKE_RUNNER_SLOW_ATTEMPTS", 1e9))) seconds = 0.05;
  const int steps = static_cast<int>(EnvDouble("FAKE_RUNNER_STEPS", 5));
  const std::string pad(static_cast<size_t>(EnvDouble("FAKE_RUNNER_PAD", 0)), 'p');
  std::ofstream metrics;
  if (rank == 0) metrics.open(config.value("metrics_path", "metrics.jsonl"), std::ios::app);
  int seq = 0;
  auto line = [&](nlohmann::json j) {
    if (rank != 0) return;
    j["seq"] = seq++;
    metrics << j.dump() << "\n" << std::flush;
  };
  auto raw = [&](const std::string& text) {
    if (rank == 0) metrics << text << std::flush;
  };
  line({{"kind", "start"},
        {"time", batchlab::UnixSeconds()},
        {"world_size", config.value("world_size", 1)},
        {"batch_size", config.value("batch_size", 0)}});
  const std::string stop_file =
      config_path.substr(0, config_path.find_last_of('/') + 1) + "stop";
  for (int s = 1; s <= steps; ++s) {
    if (std::getenv("FAKE_RUNNER_HONOUR_STOP") != nullptr && std::ifstream(stop_file).good()) {
      line({{"kind", "end"}, {"outcome", "pruned"}, {"steps", s - 1},
            {"samples", (s - 1) * config.value("batch_size", 1)}, {"seconds", seconds}});
      return 6;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds / steps));
    nlohmann::json step = {{"kind", "step"},
                           {"step", s},
                           {"samples", s * config.value("batch_size", 1)},
                           {"loss", 1.0 / s},
                           {"lr", 0.1},
                           {"step_seconds", seconds / steps}};
    if (!pad.empty()) step["pad"] = pad;
    line(step);
    if (const char* accuracy = std::getenv("FAKE_RUNNER_ACCURACY"); accuracy != nullptr) {
      line({{"kind", "eval"},
            {"step", s},
            {"samples", s * config.value("batch_size", 1)},
            {"test_accuracy", std::atof(accuracy)},
            {"test_loss", 2.3}});
    }
    if (s == 1) {
      if (Misbehaves("garbage")) raw(std::string("\xff\xfe\x00\x01 binary \xc3\x28 garbage\n", 23));
      if (Misbehaves("truncated")) raw("{\"seq\": 77, \"kind\": \"st\n");
      if (Misbehaves("nan")) {
        raw("{\"seq\": " + std::to_string(seq++) +
            ", \"kind\": \"step\", \"step\": 1, \"loss\": NaN, \"grad_norm\": Infinity}\n");
      }
      if (Misbehaves("huge")) {
        raw("{\"seq\": " + std::to_string(seq++) + ", \"kind\": \"step\", \"blob\": \"" +
            std::string(2 << 20, 'h') + "\"}\n");
      }
      if (Misbehaves("seq")) {
        const int resume = seq;
        seq = 1000;
        line({{"kind", "step"}, {"step", s}, {"jump", 1}});
        seq = resume;  // goes on lower than 1000
      }
    }
  }
  if (const char* hang = std::getenv("FAKE_RUNNER_HANG_RANK"); hang != nullptr) {
    if (rank == std::atoi(hang)) signal(SIGTERM, SIG_IGN);
    SleepForever();  // every rank waits in a collective that never completes
  }
  int code = static_cast<int>(EnvDouble("FAKE_RUNNER_EXIT", 0));
  if (attempt <= static_cast<int>(EnvDouble("FAKE_RUNNER_FAIL_ATTEMPTS", 0))) code = 1;
  if (config.value("batch_size", 0) == static_cast<int>(EnvDouble("FAKE_RUNNER_FAIL_BATCH", -1))) {
    code = 1;
  }
  if (code == 0 || code == 3 || code == 4 || code == 5) {
    const char* outcome = code == 0   ? "completed"
                          : code == 3 ? "target_reached"
                          : code == 4 ? "diverged"
                                      : "budget_exhausted";
    if (Misbehaves("end-hang")) seq = 2;  // an end line with a low seq
    line({{"kind", "end"},
          {"outcome", outcome},
          {"steps", steps},
          {"samples", steps * config.value("batch_size", 1)},
          {"seconds", seconds},
          {"final_test_loss", 0.5},
          {"final_test_accuracy", 0.8}});
  } else {
    std::fprintf(stderr, "batchlab-runner[rank %d]: fake failure of attempt %d\n", rank, attempt);
  }
  if (Misbehaves("end-hang")) SleepForever();  // wrote its end line, then never exits
  if (!pid_file.empty()) std::remove(pid_file.c_str());
  return code;
}
