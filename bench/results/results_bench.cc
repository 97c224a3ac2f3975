// Benchmarks of the results store, each printed beside a baseline measured in the same run.
//
// 1. Ingest: a runner-shaped metrics file (step lines with 14 numeric fields, an eval line every
//    100 steps) through Store::IngestMetrics, against the naive way — the same lines parsed the
//    same way, then one INSERT per value in autocommit — (a) with SQLite's default settings
//    (rollback journal, synchronous=FULL) and (b) in WAL with synchronous=NORMAL. The baselines
//    run for a bounded time on a prefix of the file. Checks: every value stored exactly once.
// 2. Queries: a database of 100,000 runs and 10,000,000 metric rows; times `results list`
//    shaped queries (whole sweep, filtered, best run per batch, one run's series). Checks: the
//    row counts equal those computed while generating.
//
//   results_bench [--lines 100000] [--runs 100000] [--rows-per-run 100] [--dir /tmp]
//                 [--baselines on|off] [--keep on|off]   (--keep on: leave big.db to time the CLI)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "base/elapsed.h"
#include "results/database.h"
#include "results/run_query.h"
#include "results/schema.h"
#include "results/store.h"
#include "results/table_writer.h"
#include "results/where_clause.h"

namespace batchlab::results {
namespace {

using Clock = std::chrono::steady_clock;
// One figure as a JSON line for bench/run (format: bench/README.md).
void PrintRow(const nlohmann::json& row) {
  fmt::print("{}\n", row.dump());
  std::fflush(stdout);
}

#define BENCH_CHECK(expr)                                                             \
  do {                                                                                \
    ::batchlab::Status bench_status_ = (expr);                                        \
    if (!bench_status_.ok()) {                                                        \
      fmt::print(stderr, "{}:{}: {}\n", __FILE__, __LINE__, bench_status_.message()); \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

template <typename T>
T Must(StatusOr<T> v) {
  BENCH_CHECK(v.status());
  return std::move(v).value();
}

// A metrics file shaped like the runner's: 14 metric values per step line.
int64_t WriteMetricsFile(const std::string& path, int lines) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  int64_t values = 0;
  fmt::print(f, "{{\"seq\":0,\"kind\":\"start\",\"host\":\"bench\"}}\n");
  int seq = 1;
  for (int step = 1; step <= lines; ++step) {
    fmt::print(f,
               "{{\"seq\":{},\"kind\":\"step\",\"step\":{},\"samples\":{},\"epoch\":{},"
               "\"loss\":{},\"lr\":0.05,\"step_seconds\":0.0123,\"data_seconds\":0.0011,"
               "\"compute_seconds\":0.0081,\"comm_seconds\":0.0021,\"optim_seconds\":0.0009,"
               "\"gns_b_small\":128,\"gns_b_big\":256,\"gns_sq_small\":{},\"gns_sq_big\":{},"
               "\"grad_norm\":{}}}\n",
               seq++, step, step * 256, step / 235, 2.3 / (1 + step * 1e-3), 0.41 + step * 1e-6,
               0.22 + step * 1e-6, 1.5 - step * 1e-6);
    values += 14;
    if (step % 100 == 0) {
      fmt::print(f,
                 "{{\"seq\":{},\"kind\":\"eval\",\"step\":{},\"samples\":{},\"seconds\":{},"
                 "\"test_loss\":0.5,\"test_accuracy\":0.8}}\n",
                 seq++, step, step * 256, step * 0.0123);
      values += 4;
    }
  }
  std::fclose(f);
  return values;
}

// The naive ingest: parse each line, one INSERT per value, each its own transaction.
double NaiveIngest(const std::string& db_path, const std::string& metrics_path, bool wal,
                   double budget_seconds, int64_t* values_out) {
  std::filesystem::remove(db_path);
  auto db = Must(Database::Open(db_path, Database::Mode::kReadWrite));
  BENCH_CHECK(
      db->Exec("CREATE TABLE metrics(run TEXT, attempt INTEGER, seq INTEGER, "
               "step INTEGER, name TEXT, value REAL, PRIMARY KEY(run, attempt, seq, name))"));
  if (wal) BENCH_CHECK(db->Exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL"));
  auto insert = Must(db->Prepare("INSERT OR IGNORE INTO metrics VALUES(?, ?, ?, ?, ?, ?)"));
  std::FILE* f = std::fopen(metrics_path.c_str(), "r");
  char* line = nullptr;
  size_t cap = 0;
  int64_t values = 0;
  const auto t0 = Clock::now();
  while (getline(&line, &cap, f) > 0 && SecondsSince(t0) < budget_seconds) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || j["kind"] != "step") continue;
    for (const auto& [key, value] : j.items()) {
      if (!value.is_number() || key == "seq" || key == "step") continue;
      insert.BindText(1, "run1").BindInt(2, 1).BindInt(3, j["seq"].get<int64_t>());
      insert.BindInt(4, j["step"].get<int64_t>()).BindText(5, key);
      BENCH_CHECK(insert.BindDouble(6, value.get<double>()).Run());
      ++values;
    }
  }
  const double seconds = SecondsSince(t0);
  std::free(line);
  std::fclose(f);
  *values_out = values;
  return seconds;
}

void IngestBench(const std::string& dir, int lines, bool baselines) {
  const std::string metrics = dir + "/metrics.jsonl";
  const int64_t expected = WriteMetricsFile(metrics, lines);
  const auto size = std::filesystem::file_size(metrics);
  fmt::print("== ingest: {} lines, {} metric values, {:.1f} MB\n", lines + lines / 100, expected,
             size / 1e6);

  const std::string db_path = dir + "/ingest.db";
  std::filesystem::remove(db_path);
  auto store = Must(Store::Open(db_path));
  auto sweep = Must(store->CreateSweep("bench", "{}", "h"));
  RunRecord run;
  run.id = "run1";
  run.sweep_id = sweep.id;
  run.config_json = "{}";
  BENCH_CHECK(store->AddRun(run));
  BENCH_CHECK(store->Transition("run1", RunState::kRunning, {}));
  auto t0 = Clock::now();
  const std::clock_t c0 = std::clock();
  IngestStats stats = Must(store->IngestMetrics("run1", 1, metrics));
  const double seconds = SecondsSince(t0);
  const double cpu_seconds = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
  auto again = Must(store->IngestMetrics("run1", 1, metrics));
  const bool ok = stats.values_stored == expected && again.values_stored == 0;
  const double rate = stats.values_stored / seconds;
  fmt::print(
      "batchlab ingest (batched transactions, prepared, WAL): {:>10.0f} values/s "
      "({:.2f} s wall; {:.0f} values per CPU-second){}\n",
      rate, seconds, stats.values_stored / cpu_seconds,
      ok ? "" : "  CHECK FAILED: values stored != values written");

  if (!ok) std::exit(1);
  // Rows for bench/run (bench/README.md). The CPU rate is the steadier figure on a shared
  // machine; its reference is the one docs/benchmarks.md recorded (about 1 us per value).
  PrintRow({{"row", "ingest: values per CPU-second"},
            {"value", stats.values_stored / cpu_seconds},
            {"unit", "values/CPU-s"},
            {"baseline", 1.0e6},
            {"baseline_name", "recorded 2026-11-22, docs/benchmarks.md"},
            {"goal", "no regression (>= 0.8x recorded)"},
            {"ok", stats.values_stored / cpu_seconds >= 0.8e6},
            {"note", fmt::format("{} values, {:.2f} s wall", stats.values_stored, seconds)}});
  if (!baselines) {
    PrintRow({{"row", "ingest: values per second (wall)"}, {"value", rate}, {"unit", "values/s"}});
    return;
  }
  int64_t naive_values = 0;
  const double naive_s = NaiveIngest(dir + "/naive.db", metrics, false, 5.0, &naive_values);
  const double naive_rate = naive_values / naive_s;
  fmt::print(
      "naive: INSERT per value, autocommit, defaults:       {:>10.0f} values/s "
      "({} values in {:.2f} s)  -> batchlab is {:.0f}x faster\n",
      naive_rate, naive_values, naive_s, rate / naive_rate);
  const double wal_s = NaiveIngest(dir + "/naive-wal.db", metrics, true, 5.0, &naive_values);
  const double wal_rate = naive_values / wal_s;
  fmt::print(
      "naive: INSERT per value, autocommit, WAL+NORMAL:     {:>10.0f} values/s "
      "({} values in {:.2f} s)  -> batchlab is {:.1f}x faster\n",
      wal_rate, naive_values, wal_s, rate / wal_rate);
  PrintRow({{"row", "ingest: values per second (wall)"},
            {"value", rate},
            {"unit", "values/s"},
            {"baseline", wal_rate},
            {"baseline_name", "INSERT per value, autocommit, WAL+NORMAL"},
            {"note", fmt::format("vs SQLite defaults (rollback journal, FULL): {:.0f}x",
                                 rate / naive_rate)}});
}

// A resolved config of realistic size (about 800 bytes, docs/protocol.md), stored with each run.
std::string ResolvedConfig(const std::string& id, int batch, int nodes, const char* rule,
                           int seed) {
  return fmt::format(
      R"({{"run_id":"{}","sweep":"big","attempt":1,"seed":{},"nodes":{},"ranks_per_node":1,)"
      R"("world_size":{},"batch_size":{},"accumulation":1,"local_batch_size":{},)"
      R"("micro_batch_size":{},"data":{{"name":"fashion-mnist","path":)"
      R"("/usr/share/datasets/fashion-mnist"}},"model":{{"name":"mlp","hidden":[128]}},)"
      R"("optimizer":{{"name":"momentum","momentum":0.9,"weight_decay":0.0}},)"
      R"("lr":{{"base":0.05,"base_batch_size":64,"rule":"{}","warmup_steps":10,)"
      R"("schedule":"constant"}},"budget":{{"epochs":1}},"eval":{{"every_steps":100,)"
      R"("subset":0}},"target":{{"metric":"test_accuracy","op":">=","value":0.85}},)"
      R"("comm":{{"backend":"mpi","bucket_mb":25}},"gns":{{"every_steps":1}},"threads":1,)"
      R"("precision":"fp32","mode":"train","metrics_path":"runs/big/{}/attempt-1/metrics.jsonl"}})",
      id, seed, nodes, nodes, batch, batch / nodes, batch / nodes, rule, id);
}

// 100,000 runs in one sweep, `rows_per_run` metric rows each (10 names x rows_per_run/10 seqs).
void BuildBigDatabase(const std::string& path, int runs, int rows_per_run, int64_t* linear_big,
                      int* batch_sizes_reached) {
  std::filesystem::remove(path);
  std::filesystem::remove(path + "-wal");
  std::filesystem::remove(path + "-shm");
  auto db = Must(OpenForWriting(path));
  BENCH_CHECK(
      db->Exec("INSERT INTO sweeps(id, name, version, spec_json, spec_hash, created_at) "
               "VALUES(1, 'big', 1, '{}', 'h', 0)"));
  const int names = 10;
  for (int n = 0; n < names; ++n) {
    BENCH_CHECK(
        db->Exec(fmt::format("INSERT INTO metric_names(id, name) VALUES({}, 'm{}')", n + 1, n)));
  }
  auto run_st = Must(db->Prepare(
      "INSERT INTO runs(run_key, id, sweep_id, ordinal, config_json, state, attempt, batch_size, "
      "nodes, world_size, lr_rule, optimizer, steps, seconds, target_step, final_test_accuracy) "
      "VALUES(?, ?, 1, ?, ?, ?, 1, ?, ?, ?, ?, 'momentum', ?, ?, ?, ?)"));
  auto metric_st = Must(db->Prepare(
      "INSERT INTO metrics(run_key, attempt, seq, name_id, step, value) VALUES(?, 1, ?, ?, ?, ?)"));
  const int batch_choices[] = {32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};
  const char* rules[] = {"none", "linear", "sqrt"};
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> u(0, 1);
  *linear_big = 0;
  std::vector<bool> reached(10, false);
  BENCH_CHECK(db->Exec("BEGIN"));
  for (int r = 0; r < runs; ++r) {
    const int bi = r % 10;
    const int batch = batch_choices[bi];
    const char* rule = rules[(r / 10) % 3];
    const int nodes = 1 << ((r / 30) % 4);
    const bool completed = (r % 7) != 0;
    const bool hit = completed && (r % 3) == 0;
    if (batch >= 1024 && std::string(rule) == "linear" && completed) ++*linear_big;
    if (hit) reached[bi] = true;
    const std::string id = fmt::format("{:016x}", rng());
    run_st.BindInt(1, r + 1).BindText(2, id).BindInt(3, r);
    run_st.BindText(4, ResolvedConfig(id, batch, nodes, rule, r));
    run_st.BindText(5, completed ? "completed" : "failed").BindInt(6, batch).BindInt(7, nodes);
    run_st.BindInt(8, nodes).BindText(9, rule).BindInt(10, 60000 / batch * 5);
    run_st.BindDouble(11, 10 + 100 * u(rng));
    if (hit) {
      run_st.BindInt(12, 1000 + static_cast<int64_t>(2000 * u(rng)));
    } else {
      run_st.BindNull(12);
    }
    BENCH_CHECK(run_st.BindDouble(13, 0.8 + 0.1 * u(rng)).Run());
    for (int i = 0; i < rows_per_run; ++i) {
      const int seq = i / names;
      metric_st.BindInt(1, r + 1).BindInt(2, seq).BindInt(3, i % names + 1).BindInt(4, seq + 1);
      BENCH_CHECK(metric_st.BindDouble(5, u(rng)).Run());
    }
    if (r % 5000 == 4999) BENCH_CHECK(db->Exec("COMMIT; BEGIN"));
  }
  BENCH_CHECK(db->Exec("COMMIT"));
  BENCH_CHECK(db->Exec("PRAGMA wal_checkpoint(TRUNCATE); ANALYZE"));
  *batch_sizes_reached = 0;
  for (bool b : reached) *batch_sizes_reached += b;
}

// Runs a prepared query to the end, writing it as CSV to /dev/null; returns (seconds, rows).
std::pair<double, int64_t> TimeQuery(Statement st, std::FILE* sink) {
  const auto t0 = Clock::now();
  const int64_t rows = Must(WriteRows(st, OutputFormat::kCsv, sink));
  return {SecondsSince(t0), rows};
}

void QueryBench(const std::string& dir, int runs, int rows_per_run) {
  const std::string path = dir + "/big.db";
  int64_t linear_big = 0;
  int reached = 0;
  auto t0 = Clock::now();
  BuildBigDatabase(path, runs, rows_per_run, &linear_big, &reached);
  fmt::print("\n== queries: {} runs, {} metric rows ({:.0f} MB), built in {:.1f} s\n", runs,
             static_cast<int64_t>(runs) * rows_per_run, std::filesystem::file_size(path) / 1e6,
             SecondsSince(t0));
  auto db = Must(OpenReadOnly(path));
  std::FILE* sink = std::fopen("/dev/null", "w");
  bool ok = true;
  // The figures docs/benchmarks.md recorded for the default size (100,000 runs x 100 rows).
  const bool default_size = runs == 100000 && rows_per_run == 100;
  auto report = [&](const char* what, std::pair<double, int64_t> r, int64_t expect,
                    double recorded) {
    const bool good = expect < 0 || r.second == expect;
    ok = ok && good;
    fmt::print("{:<62} {:>8.3f} s  {:>7} rows{}\n", what, r.first, r.second,
               good ? "" : fmt::format("  CHECK FAILED (expected {})", expect));
    nlohmann::json row = {{"row", fmt::format("listing {} runs: {}", runs, what)},
                          {"value", r.first},
                          {"unit", "s"},
                          {"note", fmt::format("{} rows", r.second)}};
    if (default_size && recorded > 0) {
      row["baseline"] = recorded;
      row["baseline_name"] = "recorded 2026-11-22 (load 8.9)";
      row["goal"] = "no regression (<= 1.5x recorded)";
      row["ok"] = r.first <= 1.5 * recorded;
    }
    PrintRow(row);
  };
  RunListOptions all;
  all.sweep = "big";
  report("list --sweep big (all runs, default columns)",
         TimeQuery(Must(PrepareRunList(*db, all)), sink), runs, 0.628);
  RunListOptions filtered = all;
  filtered.state = "completed";
  filtered.where.push_back(Must(ParseWhere("batch_size>=1024")));
  filtered.where.push_back(Must(ParseWhere("lr_rule=linear")));
  report("list --state completed --where batch_size>=1024 --where lr_rule=linear",
         TimeQuery(Must(PrepareRunList(*db, filtered)), sink), linear_big, 0.165);
  RunListOptions like = all;
  like.where.push_back(Must(ParseWhere("final_test_accuracy>0.89")));
  like.columns = RunSummaryColumns();
  report("list --where final_test_accuracy>0.89 --columns <all 36>",
         TimeQuery(Must(PrepareRunList(*db, like)), sink), -1, 0.280);
  report("SELECT * FROM best_run_per_batch",
         TimeQuery(Must(db->Prepare("SELECT * FROM best_run_per_batch")), sink), reached, 0.278);
  auto series = Must(db->Prepare(
      "SELECT step, name, value FROM run_metrics WHERE run_id = (SELECT id FROM runs WHERE "
      "run_key = ?) ORDER BY seq"));
  series.BindInt(1, runs / 2 + 1);
  report("one run's time series (run_metrics WHERE run_id = ?)", TimeQuery(std::move(series), sink),
         rows_per_run, 0);
  std::fclose(sink);
  if (!ok) std::exit(1);
}

}  // namespace
}  // namespace batchlab::results

int main(int argc, char** argv) {
  int lines = 100000, runs = 100000, rows_per_run = 100;
  bool baselines = true, keep = false;
  std::string dir = std::filesystem::temp_directory_path().string();
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--lines") lines = std::atoi(argv[i + 1]);
    if (flag == "--runs") runs = std::atoi(argv[i + 1]);
    if (flag == "--rows-per-run") rows_per_run = std::atoi(argv[i + 1]);
    if (flag == "--dir") dir = argv[i + 1];
    if (flag == "--baselines") baselines = std::string(argv[i + 1]) != "off";
    if (flag == "--keep") keep = std::string(argv[i + 1]) == "on";
  }
  dir += "/batchlab-results-bench";
  if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
    char buf[128] = {0};
    if (std::fgets(buf, sizeof(buf), f) != nullptr) fmt::print("load average at start: {}", buf);
    std::fclose(f);
  }
  std::filesystem::create_directories(dir);
  batchlab::results::IngestBench(dir, lines, baselines);
  batchlab::results::QueryBench(dir, runs, rows_per_run);
  if (keep) {
    fmt::print("kept {}/big.db for timing the CLI\n", dir);
  } else {
    std::filesystem::remove_all(dir);
  }
  return 0;
}
