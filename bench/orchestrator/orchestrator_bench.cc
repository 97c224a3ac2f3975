// Orchestrator overhead on many trivial runs (runner `mode: noop`): N runs through the real
// stack (spec -> expansion -> LPT queue -> mpirun via Boost.Process -> SQLite transitions and
// ingest), printing
//   - the makespan against its lower bound max(longest run, slot-seconds / slots),
//   - idle slot-time per run (wall x slots - busy slot-seconds) / N: what scheduling,
//     polling and bookkeeping cost between runs,
//   - the orchestrator's own CPU time per run (getrusage),
// beside two baselines measured in the same run: a bare `mpirun -np 1 batchlab-runner` (noop)
// started back to back with the default and with the chosen OMPI_MCA settings, and Optuna with
// SQLite storage running N trivial trials (python3-optuna).
//
//   orchestrator_bench [--runs 1000] [--slots 2] [--runner PATH]
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <boost/filesystem.hpp>
#include <boost/process.hpp>
#include <nlohmann/json.hpp>

#include "base/elapsed.h"
#include "orchestrator/process/captured_command.h"
#include "orchestrator/spec/expansion.h"
#include "orchestrator/launch/local_launcher.h"
#include "orchestrator/launch/runner_locator.h"
#include "orchestrator/spec/spec.h"
#include "orchestrator/execute/sweep_executor.h"
#include "results/store.h"

namespace orch = batchlab::orchestrator;
namespace fs = boost::filesystem;

namespace {

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_utime.tv_usec * 1e-6 + u.ru_stime.tv_sec +
         u.ru_stime.tv_usec * 1e-6;
}

// Mean seconds of `reps` back-to-back `mpirun -np 1 runner --config cfg` with extra env.
double BareMpirun(const std::string& runner, const std::string& cfg, int reps,
                  const std::map<std::string, std::string>& env) {
  std::vector<std::string> argv = {"mpirun", "-np", "1", "--bind-to", "none"};
  if (geteuid() == 0) argv.push_back("--allow-run-as-root");
  argv.insert(argv.end(), {runner, "--config", cfg});
  double start = batchlab::SteadySeconds();
  for (int i = 0; i < reps; ++i) {
    auto r = orch::RunCapturedCommand(argv, env);
    if (!r.ok() || r->exit_code != 0) {
      fmt::print(stderr, "bare mpirun failed: {}\n", r.ok() ? r->err : r.status().message());
      return -1;
    }
  }
  return (batchlab::SteadySeconds() - start) / reps;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 1000, slots = 2;
  std::string runner_flag;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--runs") runs = std::atoi(argv[i + 1]);
    if (a == "--slots") slots = std::atoi(argv[i + 1]);
    if (a == "--runner") runner_flag = argv[i + 1];
  }
  auto runner = orch::LocateRunner(runner_flag);
  if (!runner.ok()) {
    fmt::print(stderr, "{}\n", runner.status().message());
    return 1;
  }
  fs::path dir = fs::temp_directory_path() / fs::unique_path("batchlab-orch-bench-%%%%");
  fs::create_directories(dir);
  fmt::print("orchestrator_bench: {} noop runs on {} slots, runner {}\n", runs, slots, *runner);

  // Baseline 1: bare mpirun + runner start-up, default transport vs the chosen settings.
  nlohmann::json cfg = {{"run_id", "0000000000000000"},
                        {"sweep", "bench"},
                        {"attempt", 1},
                        {"seed", 1},
                        {"batch_size", 64},
                        {"mode", "noop"},
                        {"metrics_path", (dir / "bare.jsonl").string()}};
  {
    auto spec =
        orch::ParseSpec(R"({"name": "bare", "base": {"mode": "noop", "batch_size": 64}})", "bare");
    auto plan = orch::ExpandSpec(*spec, {});
    cfg = plan->runs[0].config;
    cfg["attempt"] = 1;
    cfg["metrics_path"] = (dir / "bare.jsonl").string();
  }
  std::string cfg_path = (dir / "bare.json").string();
  std::ofstream(cfg_path) << cfg.dump();
  const int reps = 20;
  double bare_default = BareMpirun(*runner, cfg_path, reps, {});
  double bare_chosen = BareMpirun(*runner, cfg_path, reps,
                                  {{"OMPI_MCA_btl", "self,vader"}, {"OMPI_MCA_pml", "ob1"}});

  // The orchestrator on N noop runs.
  std::string spec_text = fmt::format(
      R"({{"name": "bench", "base": {{"mode": "noop", "batch_size": 64}}, "repeats": {},
          "max_runs": {}, "resources": {{"retries": 0}}}})",
      runs, runs);
  auto spec = orch::ParseSpec(spec_text, "bench");
  auto plan = orch::ExpandSpec(*spec, {});
  if (!spec.ok() || !plan.ok()) return 1;
  auto store = batchlab::results::Store::Open((dir / "bench.db").string());
  if (!store.ok()) {
    fmt::print(stderr, "{}\n", store.status().message());
    return 1;
  }
  orch::LocalLaunchSettings ls;
  ls.pool_slots = slots;
  auto launcher = orch::MakeLocalLauncher(ls);
  orch::ExecutorOptions opts;
  opts.slots = slots;
  opts.tools.runner = *runner;
  opts.runs_dir = (dir / "runs").string();
  double cpu0 = CpuSeconds();
  double t0 = batchlab::SteadySeconds();
  auto out = orch::ExecuteSweep(*spec, *plan, **store, *launcher, opts);
  double wall = batchlab::SteadySeconds() - t0;
  double cpu = CpuSeconds() - cpu0;
  if (!out.ok()) {
    fmt::print(stderr, "{}\n", out.status().message());
    return 1;
  }
  // Baseline 2: Optuna with SQLite storage, N trivial trials.
  std::string optuna_line;
  {
    fs::path script = fs::path(BENCH_DIR) / "optuna_baseline.py";
    auto r = orch::RunCapturedCommand(
        {"/usr/bin/python3", script.string(), std::to_string(runs), (dir / "optuna.db").string()});
    if (r.ok() && r->exit_code == 0) {
      optuna_line = r->out;
    } else {
      optuna_line = "";
      fmt::print(stderr, "optuna baseline unavailable (apt-get install python3-optuna): {}\n",
                 r.ok() ? r->err : r.status().message());
    }
  }
  const double idle_per_run = (wall * slots - out->busy_slot_seconds) / runs;
  const bool all_ok = out->succeeded == runs && out->failed == 0;
  fmt::print("\n== orchestrator: {} noop runs, {} slots ({}) ==\n", runs, slots,
             all_ok ? "all completed" : "SOME RUNS DID NOT COMPLETE");
  fmt::print("makespan                      {:8.2f} s\n", wall);
  fmt::print("lower bound                   {:8.2f} s   (max(longest, slot-seconds/slots))\n",
             out->lower_bound_seconds);
  fmt::print("makespan / lower bound        {:8.3f}\n", wall / out->lower_bound_seconds);
  fmt::print("mean run (launch to reaped)   {:8.1f} ms\n", 1000 * out->busy_slot_seconds / runs);
  fmt::print(
      "idle slot-time per run        {:8.1f} ms   (scheduling, polling, SQLite between runs)\n",
      1000 * idle_per_run);
  fmt::print("orchestrator CPU per run      {:8.1f} ms\n", 1000 * cpu / runs);
  fmt::print("throughput                    {:8.1f} runs/s\n", runs / wall);
  fmt::print("\n== baselines, same machine, same run ==\n");
  fmt::print(
      "bare mpirun+runner, default MCA          {:8.1f} ms per launch (sequential, {} reps)\n",
      1000 * bare_default, reps);
  fmt::print("bare mpirun+runner, btl=self,vader pml=ob1 {:6.1f} ms per launch\n",
             1000 * bare_chosen);
  if (!optuna_line.empty()) {
    auto j = nlohmann::json::parse(optuna_line);
    fmt::print(
        "optuna (SQLite storage), {} trivial trials: {:.2f} s, {:.1f} ms per trial "
        "(no process per trial)\n",
        j["trials"].get<int>(), j["seconds"].get<double>(), j["per_trial_ms"].get<double>());
  }
  // Rows for bench/run (format: bench/README.md).
  const double mean_run_ms = 1000 * out->busy_slot_seconds / runs;
  auto row = [](nlohmann::json r) { fmt::print("{}\n", r.dump()); };
  row({{"row", fmt::format("orchestrator: mean noop run, launch to reaped ({} runs, {} slots)",
                           runs, slots)},
       {"value", mean_run_ms},
       {"unit", "ms"},
       {"baseline", 1000 * bare_chosen},
       {"baseline_name", "bare mpirun + runner, same MCA settings"},
       {"note", fmt::format("idle slot-time {:.1f} ms per run; makespan / lower bound {:.3f}",
                            1000 * idle_per_run, wall / out->lower_bound_seconds)}});
  if (!optuna_line.empty()) {
    auto j = nlohmann::json::parse(optuna_line);
    row({{"row", fmt::format("orchestrator: bookkeeping per run ({} runs)", runs)},
         {"value", 1000 * cpu / runs},
         {"unit", "ms CPU"},
         {"baseline", j["per_trial_ms"].get<double>()},
         {"baseline_name", "Optuna, SQLite storage, per trivial trial (wall)"}});
  }
  boost::system::error_code ec;
  fs::remove_all(dir, ec);
  return all_ok ? 0 : 1;
}
