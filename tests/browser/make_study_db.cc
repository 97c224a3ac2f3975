// The database of the browser test: the synthetic sweep of tests/support/synthetic_sweep.h
// (30 runs with known answers: 28 reach the target, the B=512 lr=0.05 K=4 run diverges, the
// B=32 lr=0.05 K=4 run is pending), written through the results Store as the orchestrator would.
//
//   make_study_db write DB_PATH METRICS_DIR     # the sweep
//   make_study_db wide DB_PATH METRICS_DIR      # sweep "wide": the same model at 9 batch sizes
//                                               # (16 .. 4096) × 2 LRs × 3 rank counts (54 runs)
//   make_study_db advance DB_PATH METRICS_DIR   # the pending run starts and logs 3 steps and an
//                                               # eval: what the live page must pick up
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>

#include "results/store.h"
#include "tests/support/synthetic_sweep.h"

namespace {

constexpr const char* kPendingRun = "0000000000abc002";  // ordinal 2: B=32 lr=0.05 K=4

int Advance(const std::string& db, const std::filesystem::path& dir) {
  auto store = batchlab::results::Store::Open(db);
  if (!store.ok()) throw std::runtime_error(store.status().message());
  auto started = (*store)->Transition(kPendingRun, batchlab::results::RunState::kRunning, {});
  if (!started.ok()) throw std::runtime_error(started.message());
  const std::string path = (dir / "advance.jsonl").string();
  std::ofstream out(path);
  out << R"({"seq":0,"kind":"start","world_size":4,"batch_size":32})"
      << "\n";
  for (int s = 1; s <= 3; ++s) {
    out << fmt::format(R"({{"seq":{},"kind":"step","step":{},"samples":{},"loss":{},"lr":0.05}})",
                       s, s, 32 * s, 2.0 / s)
        << "\n";
  }
  out << R"({"seq":4,"kind":"eval","step":3,"samples":96,"seconds":0.5,"test_loss":1.5,"test_accuracy":0.42})"
      << "\n";
  out.close();
  auto ingested = (*store)->IngestMetrics(kPendingRun, 1, path);
  if (!ingested.ok()) throw std::runtime_error(ingested.status().message());
  std::printf("run %s is running at step 3\n", kPendingRun);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc == 4 ? argv[1] : "";
  if (mode != "write" && mode != "advance" && mode != "wide") {
    std::fprintf(stderr, "usage: %s write|advance|wide DB_PATH METRICS_DIR\n", argv[0]);
    return 2;
  }
  try {
    std::filesystem::create_directories(argv[3]);
    if (mode == "advance") return Advance(argv[2], argv[3]);
    if (mode == "wide") {
      const auto truth = batchlab::analysis::testing::WriteSyntheticSweep(
          argv[2], argv[3], "wide", 0, {16, 32, 64, 128, 256, 512, 1024, 2048, 4096});
      std::printf("wrote sweep wide: %d runs to %s\n", truth.runs, argv[2]);
      return 0;
    }
    const auto truth = batchlab::analysis::testing::WriteSyntheticSweep(argv[2], argv[3]);
    std::printf("wrote sweep synthetic: %d runs to %s\n", truth.runs, argv[2]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_study_db: %s\n", e.what());
    return 1;
  }
  return 0;
}
