// Read-only loading of a sweep from the results database (see sweep_data.h).
#include "analysis/data/sweep_data.h"

#include <algorithm>
#include <map>
#include <memory>
#include <numeric>
#include <thread>
#include <unordered_map>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "base/run_protocol.h"
#include "results/sweep_reader.h"

namespace batchlab::analysis {

namespace {

// Appends metric rows to their series. Rows alternate between names line by line, so (run,
// metric) resolves to a Series* through a per-run slot table, refilled when the run changes.
// One per part of the scan: each run's series are written by one thread only.
class SeriesFiller {
 public:
  SeriesFiller(const std::unordered_map<int64_t, std::string>& names,
               const std::unordered_map<int64_t, size_t>& by_key, std::vector<RunData>& runs)
      : names_(names), by_key_(by_key), runs_(runs) {
    int64_t max_id = 0;
    for (const auto& [id, n] : names) max_id = std::max(max_id, id);
    slot_.assign(static_cast<size_t>(max_id) + 1, nullptr);
  }

  void Add(const results::MetricRow* rows, size_t count) {
    for (size_t i = 0; i < count; ++i) {
      const results::MetricRow& m = rows[i];
      if (m.run_key != last_key_) {
        last_key_ = m.run_key;
        auto it = by_key_.find(m.run_key);
        run_ = it == by_key_.end() ? nullptr : &runs_[it->second];
        std::fill(slot_.begin(), slot_.end(), nullptr);
      }
      if (!run_ || m.name_id < 0 || m.name_id >= static_cast<int64_t>(slot_.size())) continue;
      Series*& series = slot_[static_cast<size_t>(m.name_id)];
      if (!series) series = &run_->metrics[names_.at(m.name_id)];
      series->steps.push_back(m.step);
      series->values.push_back(m.value);
    }
  }

 private:
  const std::unordered_map<int64_t, std::string>& names_;
  const std::unordered_map<int64_t, size_t>& by_key_;
  std::vector<RunData>& runs_;
  std::vector<Series*> slot_;
  RunData* run_ = nullptr;
  int64_t last_key_ = -1;
};

// The runs' configured target as "metric>=value" text; empty if none.
std::string TargetText(const nlohmann::json& c) {
  if (!c.is_object() || !c.contains("target") || !c["target"].is_object()) return "";
  const nlohmann::json& t = c["target"];
  if (!t.contains("value") || !t["value"].is_number()) return "";
  return fmt::format("{}{}{}", t.value("metric", "test_accuracy"), t.value("op", ">="),
                     t["value"].get<double>());
}

// The resolved config's `comm` object, every default written in (null when absent).
nlohmann::json CommOf(const nlohmann::json& c) {
  if (!c.is_object() || !c.contains("comm") || !c["comm"].is_object()) return nullptr;
  return c["comm"];
}

}  // namespace

std::vector<std::string> AnalysisMetrics(const std::string& target_metric) {
  std::vector<std::string> m = {protocol::kMetricLoss, "samples", "seconds",
                                protocol::kMetricStepSeconds, protocol::kMetricCommSeconds,
                                protocol::kMetricGnsBSmall, protocol::kMetricGnsBBig,
                                protocol::kMetricGnsSqSmall, protocol::kMetricGnsSqBig,
                                protocol::kMetricTestAccuracy, protocol::kMetricTestLoss,
                                // the synchronization modes (sync_modes.h)
                                "wait_seconds", "staleness", "effective_batch",
                                // the host's state a program reported (clients/python)
                                "cpus", "load_avg"};
  if (std::find(m.begin(), m.end(), target_metric) == m.end()) m.push_back(target_metric);
  return m;
}

namespace {

// RunData::rank_segments from the attempts (slurm.elastic): from the run's current attempt back
// through the attempts whose checkpoints each resumed, each one's rank count for the steps after
// its resume step. Left empty when every attempt of the chain ran at the run's world size.
void SetRankSegments(const std::vector<results::SweepRunRow>& rows,
                     const std::vector<results::SweepAttemptRow>& attempts,
                     const std::unordered_map<int64_t, size_t>& by_key,
                     std::vector<RunData>* runs) {
  std::map<std::pair<int64_t, int>, const results::SweepAttemptRow*> of;
  for (const results::SweepAttemptRow& a : attempts) of[{a.run_key, a.attempt}] = &a;
  for (const results::SweepRunRow& row : rows) {
    RunData& run = (*runs)[by_key.at(row.run_key)];
    std::vector<RunData::RankSegment> chain;
    bool changed = false;
    int at = row.attempt;
    for (int hops = 0; at >= 1 && hops <= row.attempt; ++hops) {
      auto it = of.find({row.run_key, at});
      if (it == of.end()) break;
      const results::SweepAttemptRow& a = *it->second;
      const int64_t after = a.resumed_from ? a.resumed_step.value_or(0) : 0;
      if (a.world_size) {
        chain.push_back({after, static_cast<int>(*a.world_size)});
        changed = changed || *a.world_size != run.world_size;
      }
      if (!a.resumed_from || *a.resumed_from >= at) break;
      at = static_cast<int>(*a.resumed_from);
    }
    if (!changed) continue;
    std::reverse(chain.begin(), chain.end());
    run.rank_segments = std::move(chain);
  }
}

}  // namespace

StatusOr<SweepData> LoadSweep(const std::string& db_path, const std::string& name,
                              const LoadOptions& options) {
  BATCHLAB_ASSIGN_OR_RETURN(std::unique_ptr<results::SweepReader> reader,
                            results::SweepReader::Open(db_path, name, options.version));
  SweepData sweep;
  sweep.name = name;
  sweep.version = reader->version();

  {
    // The spec's adaptive LR search (docs/spec.md "LR search"): which path it searched.
    BATCHLAB_ASSIGN_OR_RETURN(const std::string text, reader->SpecJson());
    const nlohmann::json spec = nlohmann::json::parse(text, nullptr, false);
    if (spec.is_object() && spec.contains("lr_search") && spec["lr_search"].is_object()) {
      sweep.lr_search_path = spec["lr_search"].value("path", std::string("lr.base"));
    }
    if (spec.is_object() && spec.contains("branch") && spec["branch"].is_object()) {
      const nlohmann::json& branch = spec["branch"];
      if (branch.contains("tolerance") && branch["tolerance"].is_number()) {
        sweep.branch_tolerance = branch["tolerance"].get<double>();
      }
      if (branch.contains("smooth_evals") && branch["smooth_evals"].is_number_integer()) {
        sweep.branch_smooth_evals = branch["smooth_evals"].get<int>();
      }
    }
  }
  std::unordered_map<int64_t, size_t> by_key;  // run_key -> index in sweep.runs
  std::vector<bool> scheduled;                  // indexed like sweep.runs: a batch schedule
  BATCHLAB_ASSIGN_OR_RETURN(std::vector<results::SweepRunRow> rows, reader->Runs());
  for (results::SweepRunRow& row : rows) {
    RunData r;
    r.id = std::move(row.run_id);
    r.state = std::move(row.state);
    r.batch_size = row.batch_size.value_or(0);
    r.nodes = static_cast<int>(row.nodes.value_or(1));
    r.world_size = static_cast<int>(row.world_size.value_or(1));
    r.local_batch_size = row.local_batch_size.value_or(r.batch_size / std::max(1, r.world_size));
    r.seed = row.seed.value_or(0);
    r.optimizer = std::move(row.optimizer);
    r.lr_rule = std::move(row.lr_rule);
    r.parameters = row.parameters.value_or(0);
    r.tokens_per_step = row.tokens_per_step.value_or(0);
    r.flops_per_step = row.flops_per_step.value_or(0);
    r.host = std::move(row.host);
    r.started_at = row.started_at.value_or(0);
    r.ended_at = row.ended_at.value_or(0);
    const nlohmann::json config = nlohmann::json::parse(row.config_json, nullptr, false);
    if (sweep.target.empty()) sweep.target = TargetText(config);
    r.comm = CommOf(config);
    scheduled.push_back(config.is_object() && config.contains("batch_schedule"));
    if (scheduled.back()) r.batch_schedule = config["batch_schedule"];
    by_key[row.run_key] = sweep.runs.size();
    sweep.runs.push_back(std::move(r));
  }
  BATCHLAB_ASSIGN_OR_RETURN(std::vector<results::SweepAttemptRow> attempts, reader->Attempts());
  SetRankSegments(rows, attempts, by_key, &sweep.runs);
  BATCHLAB_ASSIGN_OR_RETURN(std::vector<results::SweepParamRow> params, reader->Params());
  for (results::SweepParamRow& p : params) {
    auto it = by_key.find(p.run_key);
    if (it != by_key.end()) sweep.runs[it->second].params[p.name] = std::move(p.json_value);
  }

  BATCHLAB_ASSIGN_OR_RETURN(auto names, reader->MetricNames(options.metrics));
  if (!names.empty() && !sweep.runs.empty()) {
    // The metrics scan dominates on large sweeps: one connection per core, each over a disjoint
    // set of runs.
    const int parts = static_cast<int>(std::max<size_t>(
        1, std::min<size_t>({std::thread::hardware_concurrency(), 4, sweep.runs.size() / 256})));
    std::vector<SeriesFiller> fillers;
    for (int p = 0; p < parts; ++p) fillers.emplace_back(names, by_key, sweep.runs);
    BATCHLAB_RETURN_IF_ERROR(
        reader->ScanMetrics(names, parts, [&](int part, const results::MetricRow* r, size_t n) {
          fillers[static_cast<size_t>(part)].Add(r, n);
        }));
  }

  // Rows arrive in (run, seq) order, which is step order for the runner's lines; sort anything
  // else (a stable sort keeps equal steps in seq order).
  for (RunData& r : sweep.runs) {
    for (auto& entry : r.metrics) {
      Series& s = entry.second;  // not a structured binding: C++17 lambdas cannot capture one
      if (std::is_sorted(s.steps.begin(), s.steps.end())) continue;
      std::vector<size_t> idx(s.size());
      std::iota(idx.begin(), idx.end(), 0);
      std::stable_sort(idx.begin(), idx.end(),
                       [&](size_t a, size_t b) { return s.steps[a] < s.steps[b]; });
      Series sorted;
      for (size_t i : idx) {
        sorted.steps.push_back(s.steps[i]);
        sorted.values.push_back(s.values[i]);
      }
      s = std::move(sorted);
    }
  }
  // Runs with a batch schedule go apart (run_data.h).
  std::vector<RunData> constant;
  for (size_t i = 0; i < sweep.runs.size(); ++i) {
    (scheduled[i] ? sweep.scheduled : constant).push_back(std::move(sweep.runs[i]));
  }
  sweep.runs = std::move(constant);
  return sweep;
}

}  // namespace batchlab::analysis
