// `batchlab analyze crit` (see critical_batch_fit_section.h).
#include "analysis/sections/critical_batch_fit_section.h"

#include <optional>
#include <string>

#include <fmt/core.h>

#include "analysis/sections/estimate_questions.h"
#include "analysis/sections/section_format.h"

namespace batchlab::analysis {

namespace {

using nlohmann::json;

// An interval's bound, or "unavailable" (its reason is in the table's notes).
std::string Low(const Interval& i) { return i.available() ? ExactNumber(i.low) : "unavailable"; }
std::string High(const Interval& i) { return i.available() ? ExactNumber(i.high) : "unavailable"; }

}  // namespace

std::optional<double> TokensPerSequence(const SweepData& sweep) {
  std::optional<double> per;
  for (const RunData& r : sweep.runs) {
    if (r.metrics.empty() && r.tokens_per_step == 0) continue;  // never started: no facts yet
    if (r.tokens_per_step <= 0 || r.batch_size <= 0) return std::nullopt;
    const double t = static_cast<double>(r.tokens_per_step) / static_cast<double>(r.batch_size);
    if (per && *per != t) return std::nullopt;
    per = t;
  }
  return per;
}

CritSection AnalyzeCrit(const TargetSection& target, const GnsSection& gns,
                        const StudyOptions& options) {
  CritSection out;
  CritOptions c;
  c.resamples = options.resamples;
  c.confidence = options.confidence;
  c.seed = options.seed;
  StatusOr<CritFit> fit = FitCriticalBatch(StepsPointsOf(target.best), c);
  out.b_simple = gns.median;
  if (!fit.ok()) {
    out.status = fit.status().WithContext(
        fmt::format("critical batch size for target {}", target.target.ToString()));
    return out;
  }
  out.fit = *fit;
  for (const BatchBest& b : target.best) {
    out.regions.push_back(
        {b.batch_size, RegionOf(static_cast<double>(b.batch_size), out.fit.b_crit.value)});
  }
  if (out.b_simple) out.b_simple_ratio = *out.b_simple / out.fit.b_crit.value;
  return out;
}

std::vector<Table> CritTables(const CritSection& crit) {
  Table fit{"critical_batch",
            "Critical batch size fit",
            {"quantity", "value", "ci_low", "ci_high"},
            {},
            {}};
  if (!crit.status.ok()) {
    fit.notes.push_back("Not fitted: " + crit.status.message());
    if (crit.b_simple)
      fit.notes.push_back("B_simple (median over runs) = " + ProseNumber(*crit.b_simple));
    for (const std::string& n : EstimateQuestionNotes()) fit.notes.push_back(n);
    return {fit};
  }
  const CritFit& f = crit.fit;
  fit.rows.push_back({"S_min (steps)", ExactNumber(f.s_min.value), Low(f.s_min), High(f.s_min)});
  fit.rows.push_back({"E_min (samples)", ExactNumber(f.e_min.value), Low(f.e_min), High(f.e_min)});
  fit.rows.push_back(
      {"B_crit = E_min/S_min", ExactNumber(f.b_crit.value), Low(f.b_crit), High(f.b_crit)});
  if (crit.b_simple) {
    fit.rows.push_back({"B_simple (median over runs)", ExactNumber(*crit.b_simple), "", ""});
    fit.rows.push_back({"B_simple / B_crit", ExactNumber(*crit.b_simple_ratio), "", ""});
  }
  if (const std::optional<double> t = crit.tokens_per_sequence) {  // a language model's sweep
    const auto tokens = [&](double v) { return ExactNumber(*t * v); };
    const auto lo = [&](const Interval& i) { return i.available() ? tokens(i.low) : Low(i); };
    const auto hi = [&](const Interval& i) { return i.available() ? tokens(i.high) : High(i); };
    fit.rows.push_back({"E_min (tokens)", tokens(f.e_min.value), lo(f.e_min), hi(f.e_min)});
    fit.rows.push_back(
        {"B_crit (tokens per step)", tokens(f.b_crit.value), lo(f.b_crit), hi(f.b_crit)});
    if (crit.b_simple) fit.rows.push_back({"B_simple (tokens)", tokens(*crit.b_simple), "", ""});
    fit.notes.push_back(fmt::format(
        "Every run stored tokens_per_step on its start line: {} tokens per sequence (sample), so "
        "the rows in tokens are the rows in samples times {}.",
        ProseNumber(*t), ProseNumber(*t)));
  }
  fit.notes.push_back(fmt::format(
      "Fit of S = S_min (1 + B_crit/B), linear in 1/B with weights 1/S^2 (McCandlish et al. 2018 "
      "section 2.3), over {} points at {} batch sizes (each at the middle of its evaluation "
      "interval); RMS relative residual {}.",
      f.points, f.batch_sizes, ProsePercent(f.rms_relative_residual)));
  if (f.b_crit.available()) {
    fit.notes.push_back(fmt::format("{} interval: {} ({} resamples).",
                                    WholePercent(f.b_crit.confidence), f.b_crit.method,
                                    f.resamples));
  } else {
    fit.notes.push_back("Interval unavailable: " + f.b_crit.unavailable + ".");
  }
  if (f.b_crit_outside_sweep) {
    fit.notes.push_back("B_crit lies outside the swept batch sizes: it is an extrapolation.");
  }
  if (crit.b_simple) {
    fit.notes.push_back(
        "McCandlish et al. report that B_simple predicts B_crit within about an order of "
        "magnitude (ratio between 0.1 and 10).");
  }
  for (const std::string& n : EstimateQuestionNotes()) fit.notes.push_back(n);
  Table res{"critical_batch_residuals",
            "Fit residuals and regions",
            {"batch_size", "steps", "fitted", "relative_residual", "region"},
            {},
            {}};
  for (const CritResidual& r : f.residuals) {
    res.rows.push_back({ExactNumber(r.batch_size), ExactNumber(r.steps), ExactNumber(r.fitted),
                        PercentCell(r.relative),
                        RegionName(RegionOf(r.batch_size, f.b_crit.value))});
  }
  res.notes.push_back(
      "Regions: near-perfect scaling for B <= B_crit/10 (<= 10% more samples than E_min), maximal "
      "data parallelism for B >= 10 B_crit (<= 10% more steps than S_min), diminishing returns "
      "between.");
  return {fit, res};
}

json CritJson(const CritSection& c) {
  json out;
  if (c.b_simple) out["b_simple"] = JsonNumber(*c.b_simple);
  const std::optional<double> tokens = c.tokens_per_sequence;  // a language model's sweep
  if (tokens) out["tokens_per_sequence"] = JsonNumber(*tokens);
  if (tokens && c.b_simple) out["b_simple_tokens"] = JsonNumber(*tokens * *c.b_simple);
  if (!c.status.ok()) {
    out["error"] = c.status.message();
    return out;
  }
  const CritFit& f = c.fit;
  out["s_min"] = IntervalJson(f.s_min);
  out["e_min"] = IntervalJson(f.e_min);
  out["b_crit"] = IntervalJson(f.b_crit);
  out["b_crit_outside_sweep"] = f.b_crit_outside_sweep;
  if (tokens) {  // batch sizes and samples in tokens: x tokens per sequence
    auto scaled = [&](Interval i) {
      i.value *= *tokens;
      i.low *= *tokens;
      i.high *= *tokens;
      return IntervalJson(i);
    };
    out["b_crit_tokens"] = scaled(f.b_crit);
    out["e_min_tokens"] = scaled(f.e_min);
  }
  out["bootstrap"] = f.bootstrap;
  out["resamples"] = f.resamples;
  out["seed_dof"] = f.seed_dof;
  out["seed_relative_sd"] = JsonNumber(f.seed_relative_sd);
  out["lack_of_fit_relative_sd"] = JsonNumber(f.lack_of_fit_relative_sd);
  out["max_eval_resolution"] = JsonNumber(f.max_resolution);
  out["points"] = f.points;
  out["batch_sizes"] = f.batch_sizes;
  out["rms_relative_residual"] = JsonNumber(f.rms_relative_residual);
  if (c.b_simple_ratio) out["b_simple_over_b_crit"] = JsonNumber(*c.b_simple_ratio);
  json res = json::array();
  for (const CritResidual& r : f.residuals) {
    res.push_back({{"batch_size", r.batch_size},
                   {"steps", r.steps},
                   {"fitted", JsonNumber(r.fitted)},
                   {"relative", JsonNumber(r.relative)},
                   {"resolution", JsonNumber(r.resolution)},
                   {"region", RegionName(RegionOf(r.batch_size, f.b_crit.value))}});
  }
  out["residuals"] = res;
  return out;
}

}  // namespace batchlab::analysis
