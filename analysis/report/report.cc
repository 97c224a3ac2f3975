// Report rendering (see report.h).
#include "analysis/report/report.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <fmt/core.h>

#include "analysis/sections/study.h"
#include "base/atomic_file.h"
#include "base/count_text.h"

namespace batchlab::analysis {

std::vector<std::string> Summary(const Study& s) {
  std::vector<std::string> out;
  std::string states;
  for (const auto& [state, n] : s.states)
    states += fmt::format("{}{} {}", states.empty() ? "" : ", ", n, state);
  if (!s.target_status.ok()) {
    out.push_back(
        fmt::format("{} runs ({}); no target: {}", s.runs, states, s.target_status.message()));
  } else {
    out.push_back(
        fmt::format("{} runs ({}); target {}.", s.runs, states, s.target.target.ToString()));
    int reached = 0;
    for (const TargetHit& h : s.target.hits) reached += h.status == HitStatus::kReached;
    out.push_back(fmt::format("{} of {} runs reached the target.", reached, s.runs));
    for (const LrFound& f : s.target.lr_found) {
      out.push_back(fmt::format("LR search at B={}{}: {} = {} ({} runs, {} LRs tried{}).",
                                f.batch_size, f.others.empty() ? "" : " " + f.others,
                                s.target.lr_search_path,
                                f.lr ? FormatNumber(*f.lr) : "none reached the target", f.runs,
                                f.lrs, f.at_edge ? "; at the edge of the range tried" : ""));
    }
  }
  if (s.crit.status.ok()) {
    const CritFit& f = s.crit.fit;
    const std::string ci =
        f.b_crit.available() ? fmt::format("{} CI {} to {}", WholePercent(f.b_crit.confidence),
                                           FormatNumber(f.b_crit.low), FormatNumber(f.b_crit.high))
                             : "interval unavailable: " + f.b_crit.unavailable;
    out.push_back(
        fmt::format("Critical batch size B_crit = {} ({}); S_min = {} steps, E_min = {} samples.",
                    FormatNumber(f.b_crit.value), ci, FormatNumber(f.s_min.value),
                    FormatNumber(f.e_min.value)));
    if (!f.b_crit.available()) {
      // No interval to scale into tokens.
    } else if (const std::optional<double> t = s.crit.tokens_per_sequence) {
      out.push_back(fmt::format(
          "In tokens ({} per sequence): B_crit = {} tokens per step ({} CI {} to {}); "
          "E_min = {} tokens.",
          FormatNumber(*t), FormatNumber(*t * f.b_crit.value), WholePercent(f.b_crit.confidence),
          FormatNumber(*t * f.b_crit.low), FormatNumber(*t * f.b_crit.high),
          FormatNumber(*t * f.e_min.value)));
    }
  } else {
    out.push_back("Critical batch size not fitted: " + s.crit.status.message());
  }
  if (s.gns.median) {
    std::string ratio;
    if (s.crit.b_simple_ratio)
      ratio = fmt::format(" ({}x B_crit)", FormatNumber(*s.crit.b_simple_ratio));
    std::string tokens;
    if (s.crit.tokens_per_sequence) {
      tokens =
          fmt::format(" (= {} tokens)", FormatNumber(*s.crit.tokens_per_sequence * *s.gns.median));
    }
    out.push_back(fmt::format("Gradient noise scale B_simple: median {}{} over {} runs{}.",
                              FormatNumber(*s.gns.median), tokens, s.gns.runs.size(), ratio));
  }
  if (!s.pareto.frontier.empty()) {
    const TargetHit& fast = *s.pareto.hits[s.pareto.frontier.front()];
    const TargetHit& cheap = *s.pareto.hits[s.pareto.frontier.back()];
    out.push_back(fmt::format(
        "Fastest to target: {} in {} s of training (train_seconds); cheapest: {} with {} {} ({} on "
        "the frontier).",
        fast.label, FormatNumber(fast.seconds), cheap.label,
        FormatNumber(s.pareto.points[s.pareto.frontier.back()].compute),
        ComputeUnitName(s.pareto.compute.unit),
        Count(static_cast<long long>(s.pareto.frontier.size()), "run")));
  }
  for (std::string& line : SyncSummary(s.sync)) out.push_back(std::move(line));
  if (!s.scaling.alpha_beta_status.ok()) {
    out.push_back("Alpha-beta fit: " + s.scaling.alpha_beta_status.message());
  } else if (!s.scaling.alpha_beta.undetermined.empty()) {
    out.push_back("Measured allreduce: not determined: " + s.scaling.alpha_beta.undetermined +
                  ".");
  } else if (!s.scaling.alpha_beta.separated) {
    out.push_back(fmt::format(
        "Measured allreduce: beta = {} GB/s (bandwidth-only: one (K, model size) design, alpha "
        "not determined).",
        FormatNumber(s.scaling.alpha_beta.bandwidth_bytes_per_second / 1e9)));
  } else {
    out.push_back(fmt::format("Measured allreduce: alpha = {} s, beta = {} GB/s.",
                              FormatNumber(s.scaling.alpha_beta.alpha_seconds),
                              FormatNumber(s.scaling.alpha_beta.bandwidth_bytes_per_second / 1e9)));
  }
  int flagged = 0, incomparable = 0;
  for (const auto* rows : {&s.scaling.strong, &s.scaling.weak}) {
    for (const ScalingRow& r : *rows) {
      flagged += r.above_possible;
      incomparable += !r.incomparable.empty();
    }
  }
  if (flagged + incomparable > 0) {
    out.push_back(fmt::format(
        "Scaling: {} efficiency estimate(s) above 100% beyond their interval are shown as noise, "
        "and {} have no baseline that ran under the same conditions (not results).",
        flagged, incomparable));
  }
  if (s.projection.status.ok()) out.push_back(s.projection.check.Sentence());
  return out;
}

std::vector<Table> StudyTables(const Study& s) {
  std::vector<Table> target = TargetTables(s.target);
  std::vector<Table> pareto = ParetoTables(s.pareto);
  if (!s.target_status.ok()) {
    for (std::vector<Table>* group : {&target, &pareto}) {
      for (Table& t : *group) {
        t.notes = {"Not computed: " + s.target_status.message()};
        t.title += " (no target)";
      }
    }
  }
  std::vector<Table> out;
  if (!s.recommendation.measured.empty()) out.push_back(RecommendationTable(s.recommendation));
  if (s.sync.varies) target.push_back(SyncTable(s.sync));
  for (auto&& group : {target, CritTables(s.crit), GnsTables(s.gns, s.options), pareto,
                       ScalingTables(s.scaling), ProjectionTables(s.projection)}) {
    out.insert(out.end(), group.begin(), group.end());
  }
  if (s.lr.varied) {
    for (const Table& t : LrTables(s.lr)) out.push_back(t);
  }
  if (!s.cbs.points.empty()) {
    for (const Table& t : CbsTables(s.cbs, /*questions=*/false)) out.push_back(t);
  }
  return out;
}

std::string RenderMarkdown(const Study& s) {
  std::string md = fmt::format("# batchlab report: sweep {} (version {})\n\n", s.sweep, s.version);
  md += "## Summary\n\n";
  for (const std::string& line : Summary(s)) md += "- " + line + "\n";
  if (!s.recommendation.measured.empty()) {
    md +=
        fmt::format("\n## Recommendation (prefer {})\n\n", PreferenceName(s.recommendation.prefer));
    for (const std::string& line : RecommendationLines(s.recommendation)) md += line + "\n\n";
  }
  if (s.lr.varied) {
    md += "\n## Learning-rate law (best LR per batch size)\n\n";
    for (const std::string& line : LrLines(s.lr)) md += "- " + line + "\n";
  }
  if (!s.cbs.points.empty()) {
    md += "\n## Critical batch size over training (branch study)\n\n";
    for (const std::string& line : CbsLines(s.cbs)) md += "- " + line + "\n";
  }
  md +=
      "\nMethods, formulas and their sources: docs/methods.md. Projections are a model, not "
      "measurements.\n\n## Results\n\n";
  for (const Table& t : StudyTables(s)) md += t.ToMarkdown();
  return md;
}

StatusOr<std::vector<std::string>> WriteReport(const Study& study, const std::string& out_dir) {
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) {
    return InvalidArgumentError(
        fmt::format("--out {}: cannot create the directory: {}", out_dir, ec.message()));
  }
  const std::filesystem::path dir(out_dir);
  std::vector<std::string> written;
  auto put = [&](const std::string& name, const std::string& text) -> Status {
    const std::filesystem::path p = dir / name;
    BATCHLAB_RETURN_IF_ERROR(WriteFileAtomically(p.string(), text));
    written.push_back(p.string());
    return OkStatus();
  };
  BATCHLAB_RETURN_IF_ERROR(put("report.md", RenderMarkdown(study)));
  BATCHLAB_RETURN_IF_ERROR(put("report.html", RenderHtml(study)));
  for (const Table& t : StudyTables(study)) {
    BATCHLAB_RETURN_IF_ERROR(put(t.name + ".csv", t.ToCsv()));
  }
  return written;
}

}  // namespace batchlab::analysis
