// `batchlab analyze gns` (see gns_section.h).
#include "analysis/sections/gns_section.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <thread>
#include <tuple>

#include <fmt/core.h>

#include "analysis/sections/section_format.h"

namespace batchlab::analysis {

namespace {

using nlohmann::json;

// The noise-scale estimate of one run (nullopt when it logged no gns_* metrics).
std::optional<GnsRun> GnsOfRun(const RunData& run, const StudyOptions& options) {
  const std::vector<GnsSample> samples = GnsSamplesOf(run);
  if (samples.empty()) return std::nullopt;
  GnsRun r;
  r.run_id = run.id;
  r.label = RunLabel(run);
  r.config_key = ConfigKey(run, {"seed"});
  r.batch_size = run.batch_size;
  r.world_size = run.world_size;
  GnsOptions g;
  std::tie(g.from_step, g.to_step) = GnsWindow(options);
  g.resamples = options.resamples;
  g.confidence = options.confidence;
  g.seed = options.seed;
  StatusOr<std::vector<GnsPoint>> series = GnsSeries(samples, options.beta);
  if (!series.ok()) {
    r.status = series.status();
    return r;
  }
  r.series = std::move(*series);
  for (const GnsPoint& p : r.series) {
    if (p.step > g.to_step) break;
    r.smoothed_end = p;
  }
  StatusOr<GnsEstimate> est = EstimateGns(samples, g);
  if (est.ok() && !GnsUndetermined(*est).empty()) {
    r.estimate = *est;  // kept for JSON; the tables and the sweep's median leave it out
    r.status = FailedPreconditionError(GnsUndetermined(*est));
  } else if (est.ok()) {
    r.estimate = *est;
  } else {
    r.status = est.status();
  }
  return r;
}

std::string Window(const StudyOptions& o) {
  const auto [from, to] = GnsWindow(o);
  const bool open_end = to == std::numeric_limits<int64_t>::max();
  return fmt::format("steps [{}, {}]", from, open_end ? "end" : std::to_string(to));
}

}  // namespace

std::pair<int64_t, int64_t> GnsWindow(const StudyOptions& o) {
  if (o.at_step <= 0) return {o.from_step, o.to_step};
  // The tolerance keeps e.g. β = 0.9 at 10 steps despite 1/(1 − 0.9) = 10.000000000000002.
  const auto memory = static_cast<int64_t>(std::ceil(1.0 / (1.0 - o.beta) - 1e-9));
  return {std::max<int64_t>(0, o.at_step - memory + 1), o.at_step};
}

GnsSection AnalyzeGns(const SweepData& sweep, const StudyOptions& options) {
  // Runs are independent: the bootstraps of a large sweep are spread over the cores. Each run's
  // bootstrap is seeded by options.seed alone, so results do not depend on the thread count.
  const size_t n = sweep.runs.size();
  std::vector<std::optional<GnsRun>> per_run(n);
  const size_t threads =
      std::max<size_t>(1, std::min<size_t>(std::thread::hardware_concurrency(), n / 64));
  std::vector<std::thread> pool;
  for (size_t t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (size_t i = t; i < n; i += threads) per_run[i] = GnsOfRun(sweep.runs[i], options);
    });
  }
  for (std::thread& th : pool) th.join();

  GnsSection out;
  std::map<std::string, std::vector<double>> by_config;
  std::map<std::string, std::string> labels;
  std::vector<double> values;
  for (std::optional<GnsRun>& r : per_run) {
    if (!r) continue;
    if (r->status.ok()) {
      values.push_back(r->estimate.b_simple.value);
      by_config[r->config_key].push_back(r->estimate.b_simple.value);
      labels[r->config_key] = r->label;
    }
    out.runs.push_back(std::move(*r));
  }
  for (const auto& [key, v] : by_config) {
    if (v.size() >= 2) out.seeds.push_back({key, labels[key], SpreadAcrossSeeds(v)});
  }
  if (!values.empty()) {
    out.min = *std::min_element(values.begin(), values.end());
    out.max = *std::max_element(values.begin(), values.end());
    out.median = Quantile(values, 0.5);
  }
  return out;
}

std::vector<Table> GnsTables(const GnsSection& gns, const StudyOptions& options) {
  Table t{"gns",
          "Gradient noise scale B_simple per run",
          {"run_id", "run", "B_simple", "ci_low", "ci_high", "|G|^2", "tr(Sigma)", "samples",
           "smoothed_end", "status"},
          {},
          {}};
  for (const GnsRun& r : gns.runs) {
    const std::string last = r.smoothed_end ? ExactNumber(r.smoothed_end->b_simple) : "";
    if (r.status.ok()) {
      const GnsEstimate& e = r.estimate;
      t.rows.push_back({r.run_id, r.label, ExactNumber(e.b_simple.value),
                        ExactNumber(e.b_simple.low), ExactNumber(e.b_simple.high),
                        ExactNumber(e.g2), ExactNumber(e.trace), IntegerCell(e.samples), last,
                        "ok"});
    } else {
      t.rows.push_back({r.run_id, r.label, "", "", "", "", "", "", last, r.status.message()});
    }
  }
  t.notes.push_back(fmt::format(
      "B_simple = tr(Sigma)/|G|^2 from the unbiased two-batch estimates (McCandlish et al. 2018, "
      "App. A): ratio of their means over {}, {} moving-block bootstrap interval over steps "
      "({} resamples); smoothed_end = ratio of the debiased EMAs (beta={}) at the window's last "
      "step.",
      Window(options), WholePercent(options.confidence), options.resamples, options.beta));
  if (gns.median) {
    t.notes.push_back(fmt::format("Sweep B_simple: median {} over the runs (range {} to {}).",
                                  ProseNumber(*gns.median), ProseNumber(*gns.min),
                                  ProseNumber(*gns.max)));
  } else if (gns.runs.empty()) {
    t.notes.push_back(
        "No run logged gns_* metrics: set gns.every_steps > 0 and use >1 rank or accumulation.");
  }
  std::vector<Table> out = {t};
  if (!gns.seeds.empty()) {
    Table s{"gns_seeds",
            "B_simple across seeds",
            {"config", "run", "seeds", "mean", "stddev", "min", "max"},
            {},
            {}};
    for (const GnsConfigSpread& c : gns.seeds) {
      s.rows.push_back({c.config_key, c.label, IntegerCell(c.spread.n), ExactNumber(c.spread.mean),
                        ExactNumber(c.spread.stddev), ExactNumber(c.spread.min),
                        ExactNumber(c.spread.max)});
    }
    out.push_back(s);
  }
  return out;
}

json GnsJson(const GnsSection& gns, const StudyOptions& options, bool include_series) {
  json runs = json::array();
  for (const GnsRun& r : gns.runs) {
    json j = {{"run_id", r.run_id},
              {"label", r.label},
              {"batch_size", r.batch_size},
              {"world_size", r.world_size}};
    if (r.status.ok()) {
      j["b_simple"] = IntervalJson(r.estimate.b_simple);
      j["g2"] = JsonNumber(r.estimate.g2);
      j["trace"] = JsonNumber(r.estimate.trace);
      j["samples"] = r.estimate.samples;
      j["first_step"] = r.estimate.first_step;
      j["last_step"] = r.estimate.last_step;
    } else {
      j["error"] = r.status.message();
    }
    if (r.smoothed_end) {
      j["smoothed_end"] = {{"step", r.smoothed_end->step},
                           {"b_simple", JsonNumber(r.smoothed_end->b_simple)}};
    }
    if (include_series) {
      json s = json::array();
      for (const GnsPoint& p : r.series) {
        s.push_back({{"step", p.step},
                     {"g2", JsonNumber(p.g2)},
                     {"trace", JsonNumber(p.trace)},
                     {"b_simple", JsonNumber(p.b_simple)}});
      }
      j["series"] = s;
    }
    runs.push_back(j);
  }
  json seeds = json::array();
  for (const GnsConfigSpread& c : gns.seeds) {
    seeds.push_back({{"config", c.config_key},
                     {"label", c.label},
                     {"seeds", c.spread.n},
                     {"mean", JsonNumber(c.spread.mean)},
                     {"stddev", JsonNumber(c.spread.stddev)},
                     {"min", JsonNumber(c.spread.min)},
                     {"max", JsonNumber(c.spread.max)}});
  }
  const auto [from, to] = GnsWindow(options);
  json out = {{"beta", options.beta},
              {"from_step", from},
              {"to_step", to == std::numeric_limits<int64_t>::max() ? json(nullptr) : json(to)},
              {"resamples", options.resamples},
              {"runs", runs},
              {"seeds", seeds}};
  if (gns.median) {
    out["median"] = JsonNumber(*gns.median);
    out["min"] = JsonNumber(*gns.min);
    out["max"] = JsonNumber(*gns.max);
  }
  return out;
}

}  // namespace batchlab::analysis
