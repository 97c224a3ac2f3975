// batchlab-runner: one rank of a data-parallel training job (docs/protocol.md, docs/runner.md).
//
//   mpirun -np 2 batchlab-runner --config RUN_DIR/config.json
//   batchlab-runner --validate --config config.json        # exit 0 or 2, trains nothing
//   batchlab-runner --config c.json --dump-params /tmp/p   # also writes /tmp/p.rank<r>
//
// Exit codes: 0 completed, 3 target reached, 4 diverged, 5 budget exhausted, 2 bad config,
// 1 any other failure. Messages go to stderr prefixed with "batchlab-runner[rank r]:".
#include <mpi.h>

#include <cstdio>
#include <exception>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <torch/torch.h>

#include "runner/communicator.h"
#include "runner/datasets/dataset.h"
#include "runner/metrics_writer.h"
#include "runner/run_config.h"
#include "runner/runner_error.h"
#include "runner/trainer.h"

namespace batchlab::runner {
namespace {

#define BATCHLAB_MPI_CHECK(call)                                                         \
  do {                                                                                   \
    const int rc_ = (call);                                                              \
    if (rc_ != MPI_SUCCESS) {                                                            \
      char text_[MPI_MAX_ERROR_STRING];                                                  \
      int len_ = 0;                                                                      \
      MPI_Error_string(rc_, text_, &len_);                                               \
      throw RunnerError(RunnerError::Kind::kComm, std::string(__FILE__) + ":" +          \
                                                      std::to_string(__LINE__) + ": " +  \
                                                      #call + " failed: " + text_);      \
    }                                                                                    \
  } while (0)

class DoneWork : public Work {
 public:
  void Wait(std::chrono::milliseconds) override {}
};

// A minimal blocking MPI communicator, private to the runner binary until the comm engineer's
// MakeCommunicator lands (then this goes away).
class ThinMpiCommunicator : public Communicator {
 public:
  ThinMpiCommunicator() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      BATCHLAB_MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided));
    }
    BATCHLAB_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
    BATCHLAB_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size_));
  }
  ~ThinMpiCommunicator() override {
    // While an error unwinds, skip MPI_Finalize: the other ranks may be blocked in a collective,
    // and exiting without it makes mpirun stop the whole job.
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && std::uncaught_exceptions() == 0) MPI_Finalize();
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* backend() const override { return "mpi"; }
  std::unique_ptr<Work> Allreduce(torch::Tensor& t, ReduceOp op) override {
    BATCHLAB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, t.data_ptr<float>(), static_cast<int>(t.numel()),
                                     MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
    if (op == ReduceOp::kAvg) t.div_(static_cast<double>(size_));
    return std::make_unique<DoneWork>();
  }
  std::unique_ptr<Work> Broadcast(torch::Tensor& t, int root) override {
    BATCHLAB_MPI_CHECK(MPI_Bcast(t.data_ptr<float>(), static_cast<int>(t.numel()), MPI_FLOAT, root,
                                 MPI_COMM_WORLD));
    return std::make_unique<DoneWork>();
  }
  std::unique_ptr<Work> Barrier() override {
    BATCHLAB_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    return std::make_unique<DoneWork>();
  }

 private:
  int rank_ = 0, size_ = 1;
};

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v == nullptr ? fallback : std::atoi(v);
}

void DumpParameters(const torch::Tensor& flat, const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(flat.data_ptr()),
            static_cast<std::streamsize>(flat.numel() * flat.element_size()));
  if (!out) throw RunnerError(RunnerError::Kind::kInternal, "--dump-params: cannot write " + path);
}

int Main(int argc, char** argv, int& rank) {
  CLI::App app{"batchlab-runner: one rank of a data-parallel training job"};
  std::string config_path, dump_path;
  bool validate = false;
  app.add_option("--config", config_path, "resolved run config (JSON, docs/protocol.md)")
      ->required();
  app.add_flag("--validate", validate, "check the config and exit 0 (valid) or 2 (invalid)");
  app.add_option("--dump-params", dump_path,
                 "debug: write each rank's final parameters (raw float32) to PATH.rank<r>");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }

  rank = EnvInt("OMPI_COMM_WORLD_RANK", EnvInt("PMI_RANK", EnvInt("SLURM_PROCID", 0)));
  const int launcher_world =
      EnvInt("OMPI_COMM_WORLD_SIZE", EnvInt("PMI_SIZE", EnvInt("SLURM_NTASKS", 1)));
  RunConfig config = LoadRunConfig(config_path, validate ? 0 : launcher_world);
  if (validate) return 0;

  torch::set_num_threads(static_cast<int>(config.threads));
  if (config.mode == "noop") {
    if (rank == 0) {
      std::unique_ptr<MetricsWriter> out = MetricsWriter::Open(config.metrics_path);
      out->Write({{"kind", "start"}, {"time", UnixTime()}, {"world_size", config.world_size},
                  {"batch_size", config.batch_size}, {"local_batch_size", config.local_batch_size},
                  {"accumulation", config.accumulation}, {"parameters", 0}, {"mode", "noop"}});
      out->Write({{"kind", "end"}, {"outcome", "completed"}, {"steps", 0}, {"samples", 0},
                  {"seconds", 0.0}, {"target_step", nullptr}, {"target_samples", nullptr},
                  {"target_seconds", nullptr}, {"final_test_loss", nullptr},
                  {"final_test_accuracy", nullptr}});
    }
    return 0;
  }

  std::unique_ptr<Communicator> comm;
  if (config.world_size > 1) {
    if (config.comm.backend != "mpi") {
      throw BadConfig("comm.backend: \"" + config.comm.backend +
                      "\" is not built into this runner yet; use \"mpi\"");
    }
    comm = std::make_unique<ThinMpiCommunicator>();
    rank = comm->rank();
  }
  // Load the data before the metrics file exists: a missing dataset leaves no file behind.
  const Dataset data = LoadDataset(config.data);
  std::unique_ptr<MetricsWriter> metrics;
  if (rank == 0) metrics = MetricsWriter::Open(config.metrics_path);
  Trainer trainer(config, data, comm.get(), metrics.get(), rank);
  const Outcome outcome = trainer.Run();
  if (!dump_path.empty()) {
    DumpParameters(trainer.FlatParameters(), dump_path + ".rank" + std::to_string(rank));
  }
  return ExitCodeFor(outcome);
}

}  // namespace
}  // namespace batchlab::runner

int main(int argc, char** argv) {
  int rank = 0;
  try {
    return batchlab::runner::Main(argc, argv, rank);
  } catch (const batchlab::runner::RunnerError& e) {
    std::cerr << "batchlab-runner[rank " << rank << "]: " << e.what() << "\n";
    return e.exit_code();
  } catch (const std::exception& e) {
    std::cerr << "batchlab-runner[rank " << rank << "]: " << e.what() << "\n";
    return 1;
  }
}
