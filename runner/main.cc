// batchlab-runner: one rank of a data-parallel training job (docs/protocol.md, docs/runner.md).
//
//   mpirun -np 2 batchlab-runner --config RUN_DIR/config.json
//   batchlab-runner --validate --config config.json        # exit 0 or 2, trains nothing
//   batchlab-runner --validate-batch configs.jsonl         # every line a config; exit 0 or 2
//   batchlab-runner --config c.json --dump-params /tmp/p   # also writes /tmp/p.rank<r>
//   batchlab-runner --list                                 # the registered models and datasets
//   mpirun -np 2 batchlab-runner --worker DIR              # warm worker (worker_loop.h)
//
// Exit codes: 0 completed, 3 target reached, 4 diverged, 5 budget exhausted, 2 bad config,
// 1 any other failure. Messages go to stderr prefixed with "batchlab-runner[rank r]:".
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <malloc.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include "base/elapsed.h"
#include "base/launched_process.h"
#include "base/lr_schedule.h"
#include "base/run_protocol.h"
#include "runner/comm/host_staged_communicator.h"
#include "runner/comm/communicator.h"
#include "runner/data/dataset.h"
#include "runner/data/dataset_registry.h"
#include "runner/config/device.h"
#include "runner/train/metrics_writer.h"
#include "runner/models/model_registry.h"
#include "runner/optim/optimizer_factory.h"
#include "runner/train/preempt_signal.h"
#include "runner/config/run_config.h"
#include "runner/config/runner_error.h"
#include "runner/train/trainer.h"
#include "runner/train/worker_loop.h"

namespace batchlab::runner {
namespace {

// What the trainer's constructor would reject, checked without data (for --validate): the LR
// schedule and the optimizer, on a stand-in parameter. Warmup against the run's true length is
// only checked by a real run (it needs the dataset size).
void CheckOptimizerAndSchedule(const RunConfig& config) {
  const BudgetConfig& b = config.budget;
  const bool bounded = b.steps > 0 || b.epochs > 0 || b.samples > 0;
  const int64_t long_run = int64_t{1} << 40;
  const run_values::LrSchedule lr = OrBadConfig(run_values::LrSchedule::Make(
      config.lr, config.batch_size, bounded ? long_run : 0, /*steps_per_epoch=*/1));
  torch::OrderedDict<std::string, torch::Tensor> params;
  params.insert("w", torch::zeros({1}, torch::requires_grad()));
  MakeOptimizer(config.optimizer, params, lr.At(0));
}

// Everything --validate checks: the config, the optimizer and schedule, and that the data files
// exist (a missing dataset must never be launched, nor retried).
void CheckBeyondParsing(const RunConfig& config) {
  CheckOptimizerAndSchedule(config);
  if (config.mode == "train") CheckDatasetFiles(config.data);
}

// --validate-batch FILE: one LibTorch start for many configs (the orchestrator validates every
// distinct resolved config of a sweep before launching any). Prints one JSON line
// {"line": N, "error": "..."} on stdout per invalid config; 2 if any, else 0.
int ValidateBatch(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw BadConfig("--validate-batch: cannot open \"" + path + "\"");
  std::string text;
  int invalid = 0;
  for (int line = 1; std::getline(in, text); ++line) {
    if (text.empty()) continue;
    std::string error;
    try {
      CheckBeyondParsing(ParseRunConfig(nlohmann::json::parse(text), /*world_size=*/0));
    } catch (const nlohmann::json::exception& e) {
      error = std::string("not valid JSON: ") + e.what();
    } catch (const RunnerError& e) {
      if (e.kind() != RunnerError::Kind::kBadConfig) throw;
      error = e.what();
    }
    if (!error.empty()) {
      ++invalid;
      std::cout << nlohmann::json{{"line", line}, {"error", error}}.dump(
                       -1, ' ', false, nlohmann::json::error_handler_t::replace)
                << "\n";
    }
  }
  std::cout.flush();
  return invalid > 0 ? 2 : 0;
}

// --list: the registered models and datasets, one per line with its summary and own fields.
template <class Entry>
void ListEntries(const char* title, const std::vector<std::string>& names,
                 const Entry& (*find)(const std::string&)) {
  std::cout << title << ":\n";
  for (const std::string& name : names) {
    const Entry& e = find(name);
    std::cout << "  " << name << std::string(name.size() < 18 ? 18 - name.size() : 1, ' ')
              << e.summary << "\n";
    for (const OwnField& f : e.fields) {
      std::cout << std::string(20, ' ') << "own field " << DescribeOwnField(f) << "\n";
    }
  }
}

// LibTorch multiplies matrices in the system BLAS; Debian's default libblas3 is the reference
// implementation, which makes training several times slower. Says so once, on rank 0.
void WarnIfReferenceBlas(int rank) {
  if (rank != 0) return;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    // The libblas.so.3 that got loaded: Debian's alternatives put the reference one in .../blas/,
    // OpenBLAS and BLIS in .../openblas-*/ and .../blis-*/.
    if (line.find("/blas/libblas.so") != std::string::npos) {
      std::cerr << "batchlab-runner[rank 0]: warning: LibTorch is using the reference BLAS ("
                << line.substr(line.find('/')) << "); install libopenblas0-openmp for several "
                << "times faster training\n";
      return;
    }
  }
}

void DumpParameters(const torch::Tensor& flat, const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(flat.data_ptr()),
            static_cast<std::streamsize>(flat.numel() * flat.element_size()));
  if (!out) throw RunnerError(RunnerError::Kind::kInternal, "--dump-params: cannot write " + path);
}

// The dataset of the previous run of a warm worker, kept while runs name the same `data`.
struct LoadedData {
  std::string key;  // the config's `data` section
  std::optional<Dataset> data;
};

// Writes <attempt dir>/place.rank<r>.json: this rank's host name, its IPv4 addresses other than
// loopback, its local rank, the GPUs it sees and the device it was pinned to (`cuda_device`,
// ChooseCudaDevice's choice; "cpu" for -1), so a multi-node run shows where each rank ran.
// Best effort.
void WritePlace(const std::string& attempt_dir, const RankInfo& where, int cuda_device) {
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  std::vector<std::string> addresses;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) == 0) {
    for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
      if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
      char text[INET_ADDRSTRLEN] = {0};
      const auto* in = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
      if (inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text)) == nullptr) continue;
      if (std::string(text).rfind("127.", 0) != 0) addresses.push_back(text);
    }
    freeifaddrs(list);
  }
  const int gpus = static_cast<int>(torch::cuda::device_count());
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  nlohmann::json place = {
      {"rank", where.rank},
      {"world_size", where.world_size},
      {"local_rank", where.local_rank},
      {"local_size", where.local_size},
      {"host", host},
      {"addresses", addresses},
      {"gpus", gpus},
      {"device", cuda_device >= 0 ? "cuda:" + std::to_string(cuda_device) : "cpu"},
      {"cuda_visible_devices", visible != nullptr ? nlohmann::json(visible) : nlohmann::json()}};
  std::ofstream(protocol::RankPlacePath(attempt_dir, where.rank)) << place.dump() << "\n";
}

// One resolved config on this rank, as `batchlab-runner --config` runs it; returns the exit code
// and throws RunnerError for failures. `keep` (warm workers) reuses the previous run's data.
int RunConfigFile(const std::string& config_path, const RankInfo& where,
                  const std::string& dump_path, LoadedData* keep) {
  RunConfig config = LoadRunConfig(config_path, where.world_size);
  const int rank = where.rank;

  torch::set_num_threads(static_cast<int>(config.threads));
  WarnIfReferenceBlas(rank);
  if (config.mode == "noop") {
    if (rank == 0) {
      std::unique_ptr<MetricsWriter> out = MetricsWriter::Open(config.metrics_path);
      out->Write({{"kind", protocol::kLineStart},
                  {"time", UnixSeconds()},
                  {"world_size", config.world_size},
                  {"batch_size", config.batch_size},
                  {"local_batch_size", config.local_batch_size},
                  {"accumulation", config.accumulation},
                  {"parameters", 0},
                  {"mode", "noop"}});
      out->Write({{"kind", protocol::kLineEnd},
                  {"outcome", std::string(protocol::OutcomeName(protocol::Outcome::kCompleted))},
                  {"steps", 0},
                  {"samples", 0},
                  {"seconds", 0.0},
                  {"target_step", nullptr},
                  {"target_samples", nullptr},
                  {"target_seconds", nullptr},
                  {"final_test_loss", nullptr},
                  {"final_test_accuracy", nullptr}});
    }
    return 0;
  }

  // Load the data before anything else: a missing dataset fails every rank alike, before MPI
  // starts and before a metrics file exists.
  LoadedData local;
  LoadedData& loaded = keep != nullptr ? *keep : local;
  {
    std::ifstream in(config_path);
    const std::string key =
        nlohmann::json::parse(in, nullptr, false).value("data", nlohmann::json()).dump() +
        " context " + std::to_string(config.data.context);  // text: cut at model.context
    if (!loaded.data || loaded.key != key) {
      loaded.data.reset();
      loaded.data = LoadDataset(config.data);
      loaded.key = key;
    }
  }
  const Dataset& data = *loaded.data;
  config.cuda_device = ChooseCudaDevice(where.local_rank);  // -1: the CPU (device.h)
  std::unique_ptr<Communicator> comm;
  if (config.world_size > 1) {
    // Waiting ranks yield the CPU instead of spinning: a study runs several jobs on few cores.
    setenv("OMPI_MCA_mpi_yield_when_idle", "1", /*overwrite=*/0);
    CommConfig cc = config.comm;
    if (cc.rendezvous.empty()) cc.rendezvous = DefaultRendezvous(config.metrics_path);
    comm = MakeCommunicator(cc, where);
    // mpi and gloo reduce host memory: a CUDA rank's device tensors go through host copies.
    if (config.cuda_device >= 0 && std::string(comm->backend()) != "nccl") {
      comm = StageDeviceTensorsOnHost(std::move(comm));
    }
  }
  try {
    Trainer trainer(config, data, comm.get(), nullptr, rank);  // may still reject the config
    std::unique_ptr<MetricsWriter> metrics;
    if (rank == 0) metrics = MetricsWriter::Open(config.metrics_path);
    trainer.set_metrics(metrics.get());
    trainer.set_attempt_dir(std::filesystem::path(config_path).parent_path().string());
    WritePlace(std::filesystem::path(config_path).parent_path().string(), where,
               config.cuda_device);
    const Outcome outcome = trainer.Run();
    if (!dump_path.empty()) {
      DumpParameters(trainer.FlatParameters(), dump_path + ".rank" + std::to_string(rank));
    }
    return ExitCodeFor(outcome);
  } catch (...) {
    if (comm) comm->Abandon();  // the peers must not wait for this rank any longer
    throw;
  }
}

// --worker DIR: runs configs as the orchestrator hands them over (worker_loop.h). A failure is
// reported on the run's stderr.log and ends the worker with its exit code.
int RunWorker(const std::string& dir, const RankInfo& where) {
  LoadedData keep;
  return RunWorkerLoop(dir, where.rank, [&](const std::string& config_path) {
    try {
      return RunConfigFile(config_path, where, "", &keep);
    } catch (const RunnerError& e) {
      std::cerr << "batchlab-runner[rank " << where.rank << "]: " << e.what() << "\n";
      return e.exit_code();
    } catch (const std::exception& e) {
      std::cerr << "batchlab-runner[rank " << where.rank << "]: " << e.what() << "\n";
      return 1;
    }
  });
}

int Main(int argc, char** argv, int& rank, int& world) {
  CLI::App app{"batchlab-runner: one rank of a data-parallel training job"};
  std::string config_path, dump_path, batch_path, worker_dir;
  bool validate = false, list = false;
  auto* config_opt =
      app.add_option("--config", config_path, "resolved run config (JSON, docs/protocol.md)");
  app.add_flag("--validate", validate, "check the config and exit 0 (valid) or 2 (invalid)");
  app.add_option("--validate-batch", batch_path,
                 "check every config of a JSON Lines file; print {\"line\", \"error\"} per "
                 "invalid one; exit 0 (all valid) or 2")
      ->excludes(config_opt);
  app.add_option("--worker", worker_dir,
                 "warm worker: run the configs the orchestrator puts in DIR, one after another "
                 "(docs/protocol.md, \"Warm workers\")")
      ->excludes(config_opt);
  app.add_flag("--list", list, "print the registered models and datasets (model.name, data.name)");
  app.add_option("--dump-params", dump_path,
                 "debug: write each rank's final parameters (raw float32) to PATH.rank<r>");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }

  if (list) {
    ListEntries("models", ModelNames(), &FindModel);
    ListEntries("datasets", DatasetNames(), &FindDataset);
    return 0;
  }
  if (!batch_path.empty()) return ValidateBatch(batch_path);
  const RankInfo where = RankInfoFromEnvironment();
  rank = where.rank;
  world = where.world_size;
  if (!worker_dir.empty()) return RunWorker(worker_dir, where);
  if (config_path.empty()) throw BadConfig("--config: required (the resolved run config)");
  if (validate) {
    CheckBeyondParsing(LoadRunConfig(config_path, /*world_size=*/0));
    return 0;
  }
  return RunConfigFile(config_path, where, dump_path, nullptr);
}

}  // namespace
}  // namespace batchlab::runner

namespace {

// After a failure in a multi-rank job, leave without MPI_Finalize (other ranks may be blocked in
// a collective): mpirun then stops the whole job, which is what a failed rank should cause.
int Fail(int code, int world) {
  std::cerr.flush();
  if (world > 1) std::_Exit(code);
  return code;
}

}  // namespace

// glibc's malloc serves a block of 128 KiB and more with mmap and, on free, raises that
// threshold and trims the heap's top back to the system; a training step frees and reallocates
// the same activation tensors every time, so each step paid page faults and zeroed pages again
// (perf: clear_page, brk). Serving everything under 32 MiB (glibc's largest threshold) from the
// heap and trimming only above 1 GiB free keeps those pages: 4-10 % more samples/s for the cnn
// and the MLP at batch 256 on one core (docs/benchmarks.md). Setting only the trim threshold
// would freeze the mmap threshold at 128 KiB and be far slower.
static void KeepFreedTensorMemory() {
#ifdef __GLIBC__
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

int main(int argc, char** argv) {
  batchlab::EndWithLauncher();  // base/launched_process.h: never trains on unwatched
  KeepFreedTensorMemory();
  batchlab::runner::InstallPreemptHandlers();
  int rank = 0, world = 1;
  try {
    return batchlab::runner::Main(argc, argv, rank, world);
  } catch (const batchlab::runner::RunnerError& e) {
    std::cerr << "batchlab-runner[rank " << rank << "]: " << e.what() << "\n";
    return Fail(e.exit_code(), world);
  } catch (const std::exception& e) {
    std::cerr << "batchlab-runner[rank " << rank << "]: " << e.what() << "\n";
    return Fail(1, world);
  }
}
