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
// `--validate --config FILE` exits 0 (2 if FAKE_RUNNER_INVALID is set).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

namespace {

double EnvDouble(const char* name, double fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atof(v) : fallback;
}

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path;
  bool validate = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--config" && i + 1 < argc) config_path = argv[++i];
    if (a == "--validate") validate = true;
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
  const double seconds = EnvDouble("FAKE_RUNNER_SECONDS", 0.05);
  const int steps = 5;
  std::ofstream metrics;
  if (rank == 0) metrics.open(config.value("metrics_path", "metrics.jsonl"), std::ios::app);
  int seq = 0;
  auto line = [&](nlohmann::json j) {
    if (rank != 0) return;
    j["seq"] = seq++;
    metrics << j.dump() << "\n" << std::flush;
  };
  line({{"kind", "start"},
        {"time", Now()},
        {"world_size", config.value("world_size", 1)},
        {"batch_size", config.value("batch_size", 0)}});
  for (int s = 1; s <= steps; ++s) {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds / steps));
    line({{"kind", "step"},
          {"step", s},
          {"samples", s * config.value("batch_size", 1)},
          {"loss", 1.0 / s},
          {"lr", 0.1},
          {"step_seconds", seconds / steps}});
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
  if (!pid_file.empty()) std::remove(pid_file.c_str());
  return code;
}
