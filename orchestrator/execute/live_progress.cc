// Live progress of a sweep (see live_progress.h).
#include "base/elapsed.h"
#include "orchestrator/execute/live_progress.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "base/count_text.h"
#include "base/run_values.h"
#include "orchestrator/spec/run_length.h"
#include "results/table_writer.h"

namespace batchlab::orchestrator {

namespace {

using json = nlohmann::json;

std::string EvalText(const results::EvalSnapshot& ev) {
  std::string out;
  for (const auto& [name, v] : ev.values) {
    out += fmt::format("{}{}={}", out.empty() ? "" : " ", name, results::FormatNumber(v));
  }
  return fmt::format("{} @{}", out, ev.step);
}

}  // namespace


// The runner's step count (base/run_values.h's LengthOf: budget, batch schedule, sync mode).
std::optional<int64_t> BudgetSteps(const json& config) {
  const int64_t steps = run_values::LengthOf(RunShapeOf(config)).total_steps;
  if (steps <= 0) return std::nullopt;
  return steps;
}

std::string FormatDuration(double seconds) {
  const auto s = static_cast<int64_t>(std::max(0.0, std::round(seconds)));
  if (s >= 3600) return fmt::format("{}h{:02d}", s / 3600, (s % 3600) / 60);
  return fmt::format("{}:{:02d}", s / 60, s % 60);
}

LiveProgress ComputeLiveProgress(results::SweepSnapshot snap, double now) {
  LiveProgress live;
  live.sweep = snap.name;
  live.version = snap.version;
  live.spec_hash = snap.spec_hash;
  live.total = static_cast<int>(snap.runs.size());
  live.now = now;
  double finished_sum = 0, projected_sum = 0, longest_running = 0;
  int finished = 0, projected = 0, running = 0, waiting = 0;
  for (results::RunSnapshot& r : snap.runs) {
    RunLive l;
    ++live.counts[r.state];
    const json config = json::parse(r.config_json, nullptr, /*allow_exceptions=*/false);
    l.total_steps = BudgetSteps(config);
    if (r.started_at) {
      const double end = r.ended_at && r.state != "running" ? *r.ended_at : now;
      l.elapsed_seconds = std::max(0.0, end - *r.started_at);
      if (r.checkpoint_time) l.checkpoint_age_seconds = std::max(0.0, now - *r.checkpoint_time);
    }
    if (r.state == "running") {
      ++running;
      if (r.step && *r.step > 0 && l.total_steps) {
        l.eta_seconds = l.elapsed_seconds *
                        static_cast<double>(std::max<int64_t>(0, *l.total_steps - *r.step)) /
                        static_cast<double>(*r.step);
      } else if (config.is_object() && config.contains("budget") &&
                 config["budget"].contains("seconds")) {
        l.eta_seconds =
            std::max(0.0, config["budget"]["seconds"].get<double>() - l.elapsed_seconds);
      }
      if (l.eta_seconds) {
        longest_running = std::max(longest_running, *l.eta_seconds);
        projected_sum += l.elapsed_seconds + *l.eta_seconds;
        ++projected;
      }
    } else if (r.state == "pending") {
      ++waiting;
    } else if (r.started_at && r.ended_at) {
      finished_sum += l.elapsed_seconds;
      ++finished;
    }
    l.run = std::move(r);
    live.runs.push_back(std::move(l));
  }
  const double mean = finished > 0    ? finished_sum / finished
                      : projected > 0 ? projected_sum / projected
                                      : -1;
  // With nothing running and runs waiting, no sweep is advancing them (stopped, or between
  // two runs): no ETA rather than one computed for a sweep that is not moving.
  if (waiting == 0 && running == 0) {
    live.eta_seconds = 0;
  } else if (mean >= 0 && running > 0 && projected > 0) {
    live.eta_seconds = longest_running + waiting * mean / std::max(1, running);
  }
  std::string states;
  for (const auto& [state, n] : live.counts) states += fmt::format("{}={};", state, n);
  live.fingerprint = fmt::format("v{}:{}:{}", live.version, snap.lines_ingested, states);
  return live;
}

std::string FormatLiveProgress(const LiveProgress& live, bool all_runs) {
  std::string counts;
  for (const auto& [state, n] : live.counts) {
    counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, state);
  }
  const bool idle = live.counts.count("running") == 0 && live.counts.count("pending") > 0;
  std::string out = fmt::format(
      "sweep {} version {} (spec hash {})\n{}: {} | ETA {}\n", live.sweep, live.version,
      live.spec_hash, Count(live.total, "run"), counts.empty() ? "none" : counts,
      live.eta_seconds ? FormatDuration(*live.eta_seconds)
      : idle           ? "- (nothing running; `batchlab sweep run` resumes the sweep)"
                       : "?");
  std::vector<const RunLive*> shown;
  for (const RunLive& l : live.runs) {
    const bool just_ended = l.run.state != "running" && l.run.ended_at &&
                            live.now - *l.run.ended_at <= kRecentlyEndedSeconds;
    if (all_runs || l.run.state == "running" || just_ended) shown.push_back(&l);
  }
  if (shown.empty()) return out;
  // Through the CLI's one table writer (results/table_writer.h): aligned, numbers right.
  std::vector<std::vector<std::string>> rows;
  // The last checkpoint's step and age, when any shown run has one (docs/protocol.md).
  const bool checkpoints = std::any_of(shown.begin(), shown.end(), [](const RunLive* l) {
    return l->run.checkpoint_step.has_value();
  });
  for (const RunLive* l : shown) {
    const results::RunSnapshot& r = l->run;
    std::string step;
    if (r.step) {
      step =
          l->total_steps ? fmt::format("{}/{}", *r.step, *l->total_steps) : std::to_string(*r.step);
    }
    rows.push_back({r.id.substr(0, 16), r.state, step, r.loss ? results::FormatNumber(*r.loss) : "",
                    r.last_eval ? EvalText(*r.last_eval) : "",
                    r.started_at ? FormatDuration(l->elapsed_seconds) : "",
                    l->eta_seconds ? FormatDuration(*l->eta_seconds) : "", r.params});
    if (checkpoints) {
      rows.back().insert(rows.back().end() - 1,
                         r.checkpoint_step && l->checkpoint_age_seconds
                             ? fmt::format("{} ({} ago)", *r.checkpoint_step,
                                           FormatDuration(*l->checkpoint_age_seconds))
                             : "");
    }
  }
  std::vector<std::string> header = {"run",     "state", "step", "loss", "last eval",
                                     "elapsed", "ETA",   "params"};
  if (checkpoints) header.insert(header.end() - 1, "checkpoint");
  return out + results::FormatRows(header, rows, results::OutputFormat::kTable);
}

json LiveProgressJson(const LiveProgress& live) {
  json runs = json::array();
  for (const RunLive& l : live.runs) {
    const results::RunSnapshot& r = l.run;
    json j = {{"id", r.id},
              {"ordinal", r.ordinal},
              {"label", r.params},
              {"state", r.state},
              {"attempt", r.attempt},
              {"host", r.host},
              {"batch_size", r.batch_size},
              {"world_size", r.world_size},
              {"step", r.step ? json(*r.step) : json(nullptr)},
              {"total_steps", l.total_steps ? json(*l.total_steps) : json(nullptr)},
              {"loss", r.loss && std::isfinite(*r.loss) ? json(*r.loss) : json(nullptr)},
              {"elapsed_seconds", r.started_at ? json(l.elapsed_seconds) : json(nullptr)},
              {"eta_seconds", l.eta_seconds ? json(*l.eta_seconds) : json(nullptr)},
              {"last_eval", nullptr},
              {"checkpoint", r.checkpoint_step
                                 ? json{{"step", *r.checkpoint_step},
                                        {"age_seconds", l.checkpoint_age_seconds
                                                            ? json(*l.checkpoint_age_seconds)
                                                            : json(nullptr)}}
                                 : json(nullptr)}};
    if (r.last_eval) {
      json values = json::object();
      for (const auto& [k, v] : r.last_eval->values) {
        values[k] = std::isfinite(v) ? json(v) : json(nullptr);
      }
      j["last_eval"] = {{"step", r.last_eval->step}, {"values", values}};
    }
    runs.push_back(std::move(j));
  }
  return {{"sweep", live.sweep},
          {"version", live.version},
          {"spec_hash", live.spec_hash},
          {"total", live.total},
          {"counts", live.counts},
          {"eta_seconds", live.eta_seconds ? json(*live.eta_seconds) : json(nullptr)},
          {"fingerprint", live.fingerprint},
          {"runs", runs}};
}

}  // namespace batchlab::orchestrator
