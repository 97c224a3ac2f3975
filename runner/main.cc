// batchlab-runner: one rank of a data-parallel training job (docs/protocol.md, docs/runner.md).
//
//   mpirun -np 2 batchlab-runner --config RUN_DIR/config.json
//   batchlab-runner --validate --config config.json        # exit 0 or 2, trains nothing
//   batchlab-runner --validate-batch configs.jsonl         # every line a config; exit 0 or 2
//   batchlab-runner --config c.json --dump-params /tmp/p   # also writes /tmp/p.rank<r>
//
// Exit codes: 0 completed, 3 target reached, 4 diverged, 5 budget exhausted, 2 bad config,
// 1 any other failure. Messages go to stderr prefixed with "batchlab-runner[rank r]:".
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include "runner/communicator.h"
#include "runner/datasets/dataset.h"
#include "runner/lr_schedule.h"
#include "runner/metrics_writer.h"
#include "runner/optimizer_factory.h"
#include "runner/run_config.h"
#include "runner/runner_error.h"
#include "runner/trainer.h"

namespace batchlab::runner {
namespace {

// What the trainer's constructor would reject, checked without data (for --validate): the LR
// schedule and the optimizer, on a stand-in parameter. Warmup against the run's true length is
// only checked by a real run (it needs the dataset size).
void CheckOptimizerAndSchedule(const RunConfig& config) {
  const BudgetConfig& b = config.budget;
  const bool bounded = b.steps > 0 || b.epochs > 0 || b.samples > 0;
  const int64_t long_run = int64_t{1} << 40;
  const LrSchedule lr(config.lr, config.batch_size, bounded ? long_run : 0, /*steps_per_epoch=*/1);
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

int Main(int argc, char** argv, int& rank, int& world) {
  CLI::App app{"batchlab-runner: one rank of a data-parallel training job"};
  std::string config_path, dump_path, batch_path;
  bool validate = false;
  auto* config_opt =
      app.add_option("--config", config_path, "resolved run config (JSON, docs/protocol.md)");
  app.add_flag("--validate", validate, "check the config and exit 0 (valid) or 2 (invalid)");
  app.add_option("--validate-batch", batch_path,
                 "check every config of a JSON Lines file; print {\"line\", \"error\"} per "
                 "invalid one; exit 0 (all valid) or 2")
      ->excludes(config_opt);
  app.add_option("--dump-params", dump_path,
                 "debug: write each rank's final parameters (raw float32) to PATH.rank<r>");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }

  if (!batch_path.empty()) return ValidateBatch(batch_path);
  if (config_path.empty()) throw BadConfig("--config: required (the resolved run config)");

  const RankInfo where = RankInfoFromEnvironment();
  rank = where.rank;
  world = where.world_size;
  if (validate) {
    CheckBeyondParsing(LoadRunConfig(config_path, /*world_size=*/0));
    return 0;
  }
  RunConfig config = LoadRunConfig(config_path, where.world_size);

  torch::set_num_threads(static_cast<int>(config.threads));
  WarnIfReferenceBlas(rank);
  if (config.mode == "noop") {
    if (rank == 0) {
      std::unique_ptr<MetricsWriter> out = MetricsWriter::Open(config.metrics_path);
      out->Write({{"kind", "start"},
                  {"time", UnixTime()},
                  {"world_size", config.world_size},
                  {"batch_size", config.batch_size},
                  {"local_batch_size", config.local_batch_size},
                  {"accumulation", config.accumulation},
                  {"parameters", 0},
                  {"mode", "noop"}});
      out->Write({{"kind", "end"},
                  {"outcome", "completed"},
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
  const Dataset data = LoadDataset(config.data);
  std::unique_ptr<Communicator> comm;
  if (config.world_size > 1) {
    // Waiting ranks yield the CPU instead of spinning: a study runs several jobs on few cores.
    setenv("OMPI_MCA_mpi_yield_when_idle", "1", /*overwrite=*/0);
    CommConfig cc = config.comm;
    if (cc.rendezvous.empty()) cc.rendezvous = DefaultRendezvous(config.metrics_path);
    comm = MakeCommunicator(cc, where);
  }
  try {
    Trainer trainer(config, data, comm.get(), nullptr, rank);  // may still reject the config
    std::unique_ptr<MetricsWriter> metrics;
    if (rank == 0) metrics = MetricsWriter::Open(config.metrics_path);
    trainer.set_metrics(metrics.get());
    trainer.set_stop_file((std::filesystem::path(config_path).parent_path() / "stop").string());
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

int main(int argc, char** argv) {
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
