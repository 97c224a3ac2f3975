// The in-memory form of a sweep that every estimator in analysis/ reads: runs with their swept
// parameters, their outcome, and their metric series (one per metric name, ordered by step).
//
// sweep_data.h fills these structs from the SQLite results database; tests build them directly.
//
//   RunData run;
//   run.id = "3f2a9c0d11e4b7a2";
//   run.batch_size = 256;
//   run.world_size = 2;
//   run.metrics["test_accuracy"] = Series{{100, 200}, {0.80, 0.86}};
//   const Series* acc = run.Metric("test_accuracy");  // nullptr when the run never logged it
#ifndef BATCHLAB_ANALYSIS_DATA_RUN_DATA_H_
#define BATCHLAB_ANALYSIS_DATA_RUN_DATA_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace batchlab::analysis {

// One metric of one run: values in increasing step order (steps.size() == values.size()).
struct Series {
  std::vector<int64_t> steps;
  std::vector<double> values;

  size_t size() const { return steps.size(); }
  bool empty() const { return steps.empty(); }
};

// One run of a sweep (its current attempt).
struct RunData {
  std::string id;
  // Swept values as JSON text ("batch_size" -> "256", "lr.rule" -> "\"linear\"", "seed" -> "1").
  std::map<std::string, std::string> params;
  int64_t batch_size = 0;        // global batch per optimizer step
  int64_t local_batch_size = 0;  // batch_size / world_size
  int nodes = 1;
  int world_size = 1;
  int64_t seed = 0;
  // Facts of the runner's start line, stored with the run (docs/schema.md); 0 = unknown.
  int64_t parameters = 0;       // model size in scalars
  int64_t tokens_per_step = 0;  // tokens per optimizer step (language models)
  double flops_per_step = 0;    // estimated training FLOPs per optimizer step
  std::string lr_rule;          // "none" | "linear" | "sqrt"
  std::string optimizer;        // "sgd", "momentum", "lars", ...
  std::string state;            // results::RunState name: "completed", "diverged", "failed", ...
  nlohmann::json comm;          // the resolved config's `comm` object (null: not stored)
  nlohmann::json batch_schedule;  // the resolved config's `batch_schedule` (null: constant batch)
  // Where and when the current attempt ran (0: not recorded): the scaling section derives each
  // run's load, the ranks running on its host while it ran, from these.
  std::string host;
  double started_at = 0;  // seconds since the epoch
  double ended_at = 0;
  std::map<std::string, Series> metrics;
  // The rank count that trained each step when it changed between attempts (slurm.elastic: an
  // attempt may run on fewer nodes): ascending by after_step, step s was trained at the
  // world_size of the last entry with after_step < s. Empty: every step at `world_size`.
  struct RankSegment {
    int64_t after_step = 0;
    int world_size = 1;
  };
  std::vector<RankSegment> rank_segments;

  // The rank count that trained `step` (rank_segments, else world_size).
  int WorldSizeAt(int64_t step) const {
    int k = world_size;
    for (const RankSegment& s : rank_segments) {
      if (s.after_step < step) k = s.world_size;
    }
    return k;
  }

  // The series of `name`, or nullptr when the run never logged it.
  const Series* Metric(const std::string& name) const {
    auto it = metrics.find(name);
    return it == metrics.end() ? nullptr : &it->second;
  }
};

// A sweep as analysed: one version of a named sweep and its runs.
struct SweepData {
  std::string name;
  int version = 0;
  std::string target;          // the runs' configured target as "metric>=value" text; empty if none
  std::string lr_search_path;  // the spec's `lr_search` path ("lr.base"); empty without one
  // A branch study's analysis settings as the spec set them (docs/spec.md "Branch studies"):
  // `analyze cbs` and the report use them unless --tolerance / --smooth say otherwise, so the
  // analysis agrees with the study's exact pruning. Unset when the spec does not name them.
  std::optional<double> branch_tolerance;
  std::optional<int> branch_smooth_evals;
  std::vector<RunData> runs;
  // Runs with a batch schedule (config "batch_schedule", docs/spec.md): several batch sizes in one
  // run, so kept apart from `runs`, which every from-scratch estimate (steps to target per batch
  // size, B_crit, scaling) reads.
  std::vector<RunData> scheduled;
};

// Everything that identifies a run's configuration apart from the listed parameters: the swept
// values minus `drop` (exact names, or prefixes ending in '.', e.g. "lr."), joined as
// "name=value,...". Runs that differ only in a dropped parameter share a key.
std::string ConfigKey(const RunData& run, const std::vector<std::string>& drop);

// A short human label: "B=256 K=2 rule=linear opt=momentum lr.base=0.1" (batch size, world
// size, rule, optimizer, then every other swept value but the seed).
std::string RunLabel(const RunData& run);
// The swept values other than batch size, ranks and seed, as RunLabel writes them
// ("comm.sync=backup lr.base=0.1"); empty when a run has none. What sets two configurations at
// the same batch size and rank count apart.
std::string SweptDetail(const RunData& run);

}  // namespace batchlab::analysis

#endif  // BATCHLAB_ANALYSIS_DATA_RUN_DATA_H_
