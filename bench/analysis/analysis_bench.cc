// Analysing a large sweep: 10,000 runs and ~10 million metric rows, end to end from the SQLite
// file (load + every analysis section), against a named baseline measured in the same run.
//
//   batchlab (LoadSweep): one read transaction; one pass over `metrics` joined to `runs` for the
//                         sweep, filtered to the metric names the analyses use (integer ids).
//   baseline (per-run loop): what a script does with the documented views: for each run of
//                         `run_summary`, SELECT step, name, value FROM run_metrics WHERE run_id=?,
//                         keeping every metric.
// Both feed the same RunStudy; the bench checks that both give the same B_crit, steps to target
// and B_simple (and that B_crit is near the generating B_noise), then prints the times.
//
//   analysis_bench [--db PATH] [--runs N] [--keep] [--no-baseline]
//   (default: 10000 runs in a temp file, removed afterwards unless --keep)
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <random>
#include <string>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "analysis/report/report.h"
#include "analysis/data/sweep_data.h"
#include "base/elapsed.h"
#include "results/database.h"
#include "results/schema.h"
#include "results/store.h"

namespace {

using namespace batchlab;
using Clock = std::chrono::steady_clock;

// CPU seconds of this process: unlike wall time, not inflated by other jobs on a shared machine.
double CpuSeconds() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

#define BENCH_CHECK(expr)                                                                  \
  do {                                                                                     \
    ::batchlab::Status s_ = (expr);                                                        \
    if (!s_.ok()) {                                                                        \
      fmt::print(stderr, "analysis_bench: {}:{}: {}\n", __FILE__, __LINE__, s_.message()); \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

constexpr const char* kStepNames[] = {
    "loss",          "lr",           "samples",         "epoch",
    "step_seconds",  "data_seconds", "compute_seconds", "comm_seconds",
    "optim_seconds", "gns_b_small",  "gns_b_big",       "gns_sq_small",
    "gns_sq_big"};
constexpr const char* kEvalNames[] = {"samples", "seconds", "test_loss", "test_accuracy"};
constexpr int kSteps = 67;  // 67 × 13 step values + 33 evals × 4 = 1003 rows per run
constexpr int kEvalEvery = 2;

// Steps to test_accuracy >= 0.85 of the generating model: S_min (1 + B_noise / B), worse away
// from the best learning rate 0.1; runs needing more than kSteps never reach it.
double TargetStep(int64_t batch, double lr) {
  return 20.0 * (1 + 200.0 / batch) * (1 + 0.2 * std::fabs(std::log2(lr / 0.1)));
}

void Build(const std::string& path, int runs) {
  const auto t0 = Clock::now();
  auto store_or = results::Store::Open(path);
  BENCH_CHECK(store_or.status());
  auto store = std::move(*store_or);
  auto sweep = store->CreateSweep("big", "{\"name\":\"big\"}", "bighash");
  BENCH_CHECK(sweep.status());
  const int64_t batches[] = {32, 64, 128, 256, 512, 1024, 2048, 4096};
  const double lrs[] = {0.0125, 0.025, 0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4};
  const int nodes[] = {1, 2, 4, 8, 16};
  struct Planned {
    std::string id;
    int64_t batch;
    double lr;
    int k;
  };
  std::vector<Planned> planned;
  for (int i = 0; i < runs; ++i) {
    Planned p{fmt::format("{:016x}", 0x100000 + i), batches[i % 8], lrs[(i / 8) % 10],
              nodes[(i / 80) % 5]};
    const int seed = i / 400;
    results::RunRecord r;
    r.id = p.id;
    r.sweep_id = sweep->id;
    r.ordinal = i;
    r.config_json = fmt::format(
        R"({{"seed":{},"nodes":{},"ranks_per_node":1,"world_size":{},"batch_size":{},)"
        R"("local_batch_size":{},"accumulation":1,"data":{{"name":"fashion-mnist"}},)"
        R"("model":{{"name":"mlp","hidden":[128]}},"optimizer":{{"name":"momentum"}},)"
        R"("lr":{{"base":{},"rule":"none"}},"target":{{"metric":"test_accuracy","op":">=","value":0.85}}}})",
        seed, p.k, p.k, p.batch, p.batch / p.k, p.lr);
    r.params = {{"batch_size", std::to_string(p.batch)},
                {"lr.base", fmt::format("{}", p.lr)},
                {"nodes", std::to_string(p.k)},
                {"seed", std::to_string(seed)}};
    r.state = results::RunState::kPending;
    BENCH_CHECK(store->AddRun(r));
    planned.push_back(p);
  }
  store.reset();
  auto db_or = results::OpenForWriting(path);
  BENCH_CHECK(db_or.status());
  results::Database& db = **db_or;
  BENCH_CHECK(db.Exec("UPDATE runs SET attempt = 1, state = 'completed'"));
  std::vector<int64_t> name_id;
  {
    auto ins = db.Prepare("INSERT OR IGNORE INTO metric_names(name) VALUES(?)");
    BENCH_CHECK(ins.status());
    for (const char* n : kStepNames) BENCH_CHECK(ins->BindText(1, n).Run());
    for (const char* n : kEvalNames) BENCH_CHECK(ins->BindText(1, n).Run());
  }
  auto id_of = [&](const char* n) {
    auto st = db.Prepare("SELECT id FROM metric_names WHERE name = ?");
    BENCH_CHECK(st.status());
    st->BindText(1, n);
    auto row = st->Step();
    BENCH_CHECK(row.status());
    return st->ColumnInt(0);
  };
  std::vector<int64_t> step_ids, eval_ids;
  for (const char* n : kStepNames) step_ids.push_back(id_of(n));
  for (const char* n : kEvalNames) eval_ids.push_back(id_of(n));
  auto key_st = db.Prepare("SELECT run_key FROM runs WHERE id = ?");
  BENCH_CHECK(key_st.status());
  auto ins = db.Prepare(
      "INSERT INTO metrics(run_key, attempt, seq, name_id, step, value) VALUES(?, 1, ?, ?, ?, ?)");
  BENCH_CHECK(ins.status());
  std::mt19937_64 rng(1);
  std::normal_distribution<double> normal(0, 1);
  int64_t rows = 0;
  BENCH_CHECK(db.Exec("BEGIN"));
  for (const Planned& p : planned) {
    key_st->BindText(1, p.id);
    auto row = key_st->Step();
    BENCH_CHECK(row.status());
    const int64_t key = key_st->ColumnInt(0);
    BENCH_CHECK(key_st->Reset());
    // Seeds differ by ~3% in steps to target.
    const int target =
        static_cast<int>(std::ceil(TargetStep(p.batch, p.lr) * (1 + 0.03 * normal(rng))));
    const double b_small = static_cast<double>(p.batch) / p.k;
    const double step_s = 1e-4 * b_small + 2e-3 + (p.k > 1 ? 2e-4 * (p.k - 1) : 0);
    int64_t seq = 1;
    for (int s = 1; s <= kSteps; ++s, ++seq) {
      // gns: |G|² = 1.6, tr Σ = 320 (B_simple = 200) plus noise; K = 1 measures by
      // accumulation with two micro-batches.
      const double bs = p.k > 1 ? b_small : b_small / 2, bb = static_cast<double>(p.batch);
      const double sq_small = 1.6 + 320 / bs + 0.05 * (320 / bs) * normal(rng);
      const double sq_big = 1.6 + 320 / bb + 0.05 * (320 / bb) * normal(rng);
      const double v[] = {2.3 / s,
                          p.lr,
                          static_cast<double>(s * p.batch),
                          0,
                          step_s,
                          1e-4,
                          step_s / 2,
                          2e-4 * (p.k - 1),
                          1e-4,
                          bs,
                          bb,
                          sq_small,
                          sq_big};
      for (size_t m = 0; m < step_ids.size(); ++m) {
        BENCH_CHECK(ins->BindInt(1, key)
                        .BindInt(2, seq)
                        .BindInt(3, step_ids[m])
                        .BindInt(4, s)
                        .BindDouble(5, v[m])
                        .Run());
        ++rows;
      }
      if (s % kEvalEvery == 0) {
        ++seq;
        const double acc = s >= target ? 0.86 : 0.8 * s / target;
        const double e[] = {static_cast<double>(s * p.batch), s * step_s * 1.1, 0.5, acc};
        for (size_t m = 0; m < eval_ids.size(); ++m) {
          BENCH_CHECK(ins->BindInt(1, key)
                          .BindInt(2, seq)
                          .BindInt(3, eval_ids[m])
                          .BindInt(4, s)
                          .BindDouble(5, e[m])
                          .Run());
          ++rows;
        }
      }
    }
  }
  BENCH_CHECK(db.Exec("COMMIT"));
  BENCH_CHECK(db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"));
  fmt::print("built {}: {} runs, {} metric rows in {:.1f} s\n", path, planned.size(), rows,
             SecondsSince(t0));
}

// The baseline loader: one query per run through the run_metrics view, every metric kept.
analysis::SweepData LoadPerRun(const std::string& path, const std::string& name) {
  auto db_or = results::OpenReadOnly(path);
  BENCH_CHECK(db_or.status());
  results::Database& db = **db_or;
  analysis::SweepData sweep;
  sweep.name = name;
  sweep.version = 1;
  sweep.target = "test_accuracy>=0.85";
  auto runs = db.Prepare(
      "SELECT run_id, state, batch_size, nodes, world_size, local_batch_size, seed, optimizer, "
      "lr_rule, run_key FROM run_summary WHERE sweep = ? ORDER BY ordinal");
  BENCH_CHECK(runs.status());
  auto params = db.Prepare("SELECT name, json_quote(value) FROM run_params WHERE run_key = ?");
  BENCH_CHECK(params.status());
  auto metrics = db.Prepare("SELECT step, name, value FROM run_metrics WHERE run_id = ?");
  BENCH_CHECK(metrics.status());
  runs->BindText(1, name);
  while (true) {
    auto row = runs->Step();
    BENCH_CHECK(row.status());
    if (!*row) break;
    analysis::RunData r;
    r.id = runs->ColumnText(0);
    r.state = runs->ColumnText(1);
    r.batch_size = runs->ColumnInt(2);
    r.nodes = static_cast<int>(runs->ColumnInt(3));
    r.world_size = static_cast<int>(runs->ColumnInt(4));
    r.local_batch_size = runs->ColumnInt(5);
    r.seed = runs->ColumnInt(6);
    r.optimizer = runs->ColumnText(7);
    r.lr_rule = runs->ColumnText(8);
    r.parameters = 101770;
    params->BindInt(1, runs->ColumnInt(9));
    while (true) {
      auto p = params->Step();
      BENCH_CHECK(p.status());
      if (!*p) break;
      r.params[params->ColumnText(0)] = params->ColumnText(1);
    }
    BENCH_CHECK(params->Reset());
    metrics->BindText(1, r.id);
    while (true) {
      auto m = metrics->Step();
      BENCH_CHECK(m.status());
      if (!*m) break;
      analysis::Series& s = r.metrics[metrics->ColumnText(1)];
      s.steps.push_back(metrics->ColumnInt(0));
      s.values.push_back(metrics->ColumnDouble(2));
    }
    BENCH_CHECK(metrics->Reset());
    sweep.runs.push_back(std::move(r));
  }
  return sweep;
}

}  // namespace

int main(int argc, char** argv) {
  std::string path;
  int runs = 10000;
  bool keep = false;
  bool baseline = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--db" && i + 1 < argc) {
      path = argv[++i];
    } else if (a == "--runs" && i + 1 < argc) {
      runs = std::atoi(argv[++i]);
    } else if (a == "--keep") {
      keep = true;
    } else if (a == "--no-baseline") {
      baseline = false;
    } else {
      fmt::print(stderr, "usage: analysis_bench [--db PATH] [--runs N] [--keep] [--no-baseline]\n");
      return 2;
    }
  }
  if (runs < 400) {
    fmt::print(stderr, "analysis_bench: --runs must be at least 400 (one full grid)\n");
    return 2;
  }
  const bool temp = path.empty();
  if (temp) {
    path = (std::filesystem::temp_directory_path() /
            // The schema version in the name: a file cached by an older batchlab is not reused.
            fmt::format("batchlab-analysis-bench-{}-v{}.db", runs, results::kSchemaVersion))
               .string();
  }
  if (!std::filesystem::exists(path)) {
    Build(path, runs);
  } else {
    fmt::print("reusing {}\n", path);
  }

  analysis::StudyOptions opt;  // defaults: 1000 bootstrap resamples, ib-100g profile
  auto t0 = Clock::now();
  const double c0 = CpuSeconds();
  analysis::LoadOptions load;
  load.metrics = analysis::AnalysisMetrics("test_accuracy");
  auto sweep = analysis::LoadSweep(path, "big", load);
  BENCH_CHECK(sweep.status());
  const double load_s = SecondsSince(t0);
  const double load_cpu = CpuSeconds() - c0;
  auto t1 = Clock::now();
  auto study = analysis::RunStudy(*sweep, opt);
  BENCH_CHECK(study.status());
  const double study_s = SecondsSince(t1);
  const double total_s = SecondsSince(t0);
  const double total_cpu = CpuSeconds() - c0;
  int64_t values = 0;
  for (const auto& r : sweep->runs) {
    for (const auto& [n, s] : r.metrics) values += static_cast<int64_t>(s.size());
  }

  // The row for bench/run (format: bench/README.md); the baseline is added below if measured.
  nlohmann::json row = {{"row", fmt::format("analysis: LoadSweep + RunStudy, {} runs", runs)},
                        {"value", total_s},
                        {"unit", "s"},
                        {"goal", "< 10 s"},
                        {"ok", total_s < 10},
                        {"note", fmt::format("{} metric values; {:.2f} s load, {:.2f} CPU-s",
                                             values, load_s, total_cpu)}};
  if (!baseline) {
    fmt::print(
        "batchlab LoadSweep {:.2f} s ({:.2f} CPU), RunStudy {:.2f} s, total {:.2f} s ({:.2f} "
        "CPU)\n",
        load_s, load_cpu, study_s, total_s, total_cpu);
    fmt::print("{}\n", row.dump());
    return 0;
  }
  auto t2 = Clock::now();
  const double c2 = CpuSeconds();
  analysis::SweepData naive = LoadPerRun(path, "big");
  const double naive_load_s = SecondsSince(t2);
  const double naive_load_cpu = CpuSeconds() - c2;
  auto t3 = Clock::now();
  auto naive_study = analysis::RunStudy(naive, opt);
  BENCH_CHECK(naive_study.status());
  const double naive_total_s = naive_load_s + SecondsSince(t3);
  const double naive_total_cpu = CpuSeconds() - c2;
  int64_t naive_values = 0;
  for (const auto& r : naive.runs) {
    for (const auto& [n, s] : r.metrics) naive_values += static_cast<int64_t>(s.size());
  }

  // Checks: both loaders give the same answers, and the answers match the generating model.
  bool ok = study->crit.status.ok() && naive_study->crit.status.ok();
  if (ok) {
    ok = study->crit.fit.b_crit.value == naive_study->crit.fit.b_crit.value &&
         study->gns.median == naive_study->gns.median &&
         study->target.best.size() == naive_study->target.best.size() &&
         std::fabs(study->crit.fit.b_crit.value / 200 - 1) < 0.15 &&
         std::fabs(*study->gns.median / 200 - 1) < 0.15;
  }
  fmt::print("sweep: {} runs; analysis read {} metric values (baseline read {})\n",
             sweep->runs.size(), values, naive_values);
  if (study->crit.status.ok()) {
    fmt::print(
        "results: B_crit = {:.1f} [{:.1f}, {:.1f}] (generated 200), median B_simple = {:.1f} "
        "(generated 200), {} on the Pareto frontier\n",
        study->crit.fit.b_crit.value, study->crit.fit.b_crit.low, study->crit.fit.b_crit.high,
        study->gns.median.value_or(0), study->pareto.frontier.size());
  }
  fmt::print("{:<44} {:>8} {:>8} {:>8} {:>9} {:>9}\n", "", "load_s", "study_s", "total_s",
             "load_cpu", "total_cpu");
  fmt::print("{:<44} {:>8.2f} {:>8.2f} {:>8.2f} {:>9.2f} {:>9.2f}\n",
             "batchlab LoadSweep + RunStudy", load_s, study_s, total_s, load_cpu, total_cpu);
  fmt::print("{:<44} {:>8.2f} {:>8.2f} {:>8.2f} {:>9.2f} {:>9.2f}\n",
             "baseline per-run run_metrics loop + RunStudy", naive_load_s,
             naive_total_s - naive_load_s, naive_total_s, naive_load_cpu, naive_total_cpu);
  fmt::print("load speedup vs baseline: {:.1f}x wall, {:.1f}x CPU; total under 10 s: {}\n",
             naive_load_s / load_s, naive_load_cpu / load_cpu, total_s < 10 ? "yes" : "NO");
  fmt::print("check (same answers, B_crit and B_simple within 15% of 200): {}\n",
             ok ? "PASS" : "FAIL");
  row["baseline"] = naive_total_s;
  row["baseline_name"] = "per-run run_metrics loop + RunStudy";
  fmt::print("{}\n", row.dump());
  if (temp && !keep) {
    std::filesystem::remove(path);
    std::filesystem::remove(path + "-wal");
    std::filesystem::remove(path + "-shm");
  }
  return ok ? 0 : 1;
}
