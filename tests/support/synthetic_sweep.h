// A sweep with known answers, written into a real results database through the results Store
// exactly as the orchestrator would (AddRun, Transition, IngestMetrics of runner-format
// metrics.jsonl files), for the loader, study and CLI tests.
//
// Runs: batch sizes {32, 64, 128, 256, 512} × lr.base {0.05, 0.1} × nodes {1, 2, 4}, one seed.
//   steps to test_accuracy >= 0.85:  S(B, lr) = ceil(S_min (1 + B_noise/B) · (lr == 0.1 ? 1 : 1.5))
//     with S_min = 20, B_noise = 200 (so B_crit = 200, E_min = 4000)
//   step_seconds = c·B/K + o + ring(K, 4·P bytes; α, β), comm_seconds = ring(...)
//     with c = 1e-4 s/sample, o = 2e-3 s, α = 1e-4 s, β = 1e8 B/s, P = 12730 (mlp [16])
//   gns_*: drawn from the noisy quadratic model (d = 100, noise 60 → B_simple ≈ 190.4) at
//     b_small = B/K, b_big = B for K > 1 (not logged for K = 1)
// Every step logs `lr` (lr.base) and every eval `test_loss` (2.5 − 2·accuracy).
// The B=512, lr=0.05, K=4 run diverges (state diverged, loss 1e30) and B=32, lr=0.05, K=4 is still
// pending.
//
// With tokens_per_sequence > 0 every start line also stores tokens_per_step = B x it (a language
// model's sweep). `batch_sizes` replaces the five batch sizes (a wide study: the browser test's
// 9 batch sizes × 3 rank counts); the pending and diverging runs are those of B=32 and B=512.
//
//   TempDir dir;
//   SyntheticSweep truth = WriteSyntheticSweep(dir.File("batchlab.db"), dir.path());
#ifndef BATCHLAB_TESTS_SUPPORT_SYNTHETIC_SWEEP_H_
#define BATCHLAB_TESTS_SUPPORT_SYNTHETIC_SWEEP_H_

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "analysis/estimators/scaling.h"
#include "results/store.h"
#include "tests/support/noisy_quadratic.h"
#include "tests/support/temp_dir.h"

namespace batchlab::analysis::testing {

using TempDir = ::batchlab::testing::TempDir;

struct SyntheticSweep {
  double s_min = 20, b_noise = 200;
  double c = 1e-4, o = 2e-3, alpha = 1e-4, beta = 1e8;
  int64_t parameters = 12730;
  double b_simple = 0;  // the noisy quadratic model's exact value
  int runs = 0;
  // Training FLOPs of a step: 6 per parameter and sample (forward 2, backward 4).
  static double FlopsPerStep(const SyntheticSweep& t, int64_t batch) {
    return 6.0 * static_cast<double>(t.parameters) * static_cast<double>(batch);
  }
  static int StepsTo(int64_t batch, double lr, double s_min, double b_noise) {
    return static_cast<int>(std::ceil(s_min * (1 + b_noise / batch) * (lr == 0.1 ? 1.0 : 1.5)));
  }
};

inline SyntheticSweep WriteSyntheticSweep(const std::string& db_path,
                                          const std::filesystem::path& dir,
                                          const std::string& name = "synthetic",
                                          int64_t tokens_per_sequence = 0,
                                          const std::vector<int64_t>& batch_sizes = {
                                              32, 64, 128, 256, 512}) {
  SyntheticSweep truth;
  auto store_or = results::Store::Open(db_path);
  if (!store_or.ok()) throw std::runtime_error(store_or.status().message());
  auto store = std::move(*store_or);
  auto sweep = store->CreateSweep(name, "{\"name\":\"" + name + "\"}", "hash-" + name);
  if (!sweep.ok()) throw std::runtime_error(sweep.status().message());
  NoisyQuadratic nqm(100, 60.0, 11);
  truth.b_simple = nqm.TrueBSimple();
  int ordinal = 0;
  for (int64_t batch : batch_sizes) {
    for (double lr : {0.05, 0.1}) {
      for (int k : {1, 2, 4}) {
        const std::string id = fmt::format("{:016x}", 0xabc000 + ordinal);
        results::RunRecord run;
        run.id = id;
        run.sweep_id = sweep->id;
        run.ordinal = ordinal++;
        run.config_json = fmt::format(
            R"({{"run_id":"{}","sweep":"{}","seed":1,"nodes":{},"ranks_per_node":1,"world_size":{},)"
            R"("batch_size":{},"accumulation":1,"local_batch_size":{},"data":{{"name":"fashion-mnist"}},)"
            R"("model":{{"name":"mlp","hidden":[16]}},"optimizer":{{"name":"momentum"}},)"
            R"("lr":{{"base":{},"base_batch_size":64,"rule":"none"}},)"
            R"("target":{{"metric":"test_accuracy","op":">=","value":0.85}}}})",
            id, name, k, k, batch, batch / k, lr);
        run.params = {{"batch_size", std::to_string(batch)},
                      {"lr.base", fmt::format("{}", lr)},
                      {"nodes", std::to_string(k)},
                      {"seed", "1"}};
        if (!store->AddRun(run).ok()) throw std::runtime_error("AddRun");
        ++truth.runs;
        if (batch == 32 && lr == 0.05 && k == 4) continue;  // pending
        const bool diverge = batch == 512 && lr == 0.05 && k == 4;
        if (!store->Transition(id, results::RunState::kRunning, {}).ok()) {
          throw std::runtime_error("Transition");
        }
        const int target_steps = SyntheticSweep::StepsTo(batch, lr, truth.s_min, truth.b_noise);
        const int total = diverge ? 5 : target_steps + 3;
        const double comm =
            RingAllreduceSeconds(k, GradientBytes(truth.parameters), truth.alpha, truth.beta);
        const double step_s = truth.c * batch / k + truth.o + comm;
        const std::string path = (dir / (id + ".jsonl")).string();
        std::ofstream out(path);
        int seq = 0;
        // The start line's facts (stored with the run; the config alone does not tell them).
        // A language model's sweep (tokens_per_sequence > 0) also stores tokens_per_step.
        const std::string tokens =
            tokens_per_sequence > 0
                ? fmt::format(R"(,"tokens_per_step":{})", batch * tokens_per_sequence)
                : "";
        out << fmt::format(
                   R"({{"seq":{},"kind":"start","world_size":{},"batch_size":{},"parameters":{},"flops_per_step":{}{}}})",
                   seq++, k, batch, truth.parameters, SyntheticSweep::FlopsPerStep(truth, batch),
                   tokens)
            << "\n";
        for (int s = 1; s <= total; ++s) {
          std::string gns;
          if (k > 1) {
            GnsSample g = nqm.Sample(s, static_cast<double>(batch / k), k);
            gns =
                fmt::format(R"(,"gns_b_small":{},"gns_b_big":{},"gns_sq_small":{},"gns_sq_big":{})",
                            g.b_small, g.b_big, g.sq_small, g.sq_big);
          }
          // A diverging runner stops at a huge (still finite, JSON has no NaN) loss.
          const double loss = diverge && s == total ? 1e30 : 2.3 / s;
          out << fmt::format(
                     R"({{"seq":{},"kind":"step","step":{},"samples":{},"loss":{},"lr":{},"step_seconds":{},"comm_seconds":{}{}}})",
                     seq++, s, s * batch, loss, lr, step_s, comm, gns)
              << "\n";
          const double acc = s >= target_steps ? 0.86 : 0.8 * s / target_steps;
          out << fmt::format(
                     R"({{"seq":{},"kind":"eval","step":{},"samples":{},"seconds":{},"test_loss":{},"test_accuracy":{}}})",
                     seq++, s, s * batch, s * step_s * 1.1, 2.5 - 2 * acc, diverge ? 0.1 : acc)
              << "\n";
        }
        out.close();
        if (!store->IngestMetrics(id, 1, path).ok()) throw std::runtime_error("IngestMetrics");
        const results::RunState end =
            diverge ? results::RunState::kDiverged : results::RunState::kTargetReached;
        if (!store->Transition(id, end, {diverge ? 4 : 3, ""}).ok()) {
          throw std::runtime_error("Transition end");
        }
      }
    }
  }
  return truth;
}

}  // namespace batchlab::analysis::testing

#endif  // BATCHLAB_TESTS_SUPPORT_SYNTHETIC_SWEEP_H_
