// `batchlab analyze lr` (see lr_law_section.h).
#include "analysis/sections/lr_law_section.h"

#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "analysis/sections/recommendation.h"

namespace batchlab::analysis {
namespace {

nlohmann::json Finite(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

std::string Edge(const BestLr& b) {
  if (!b.reached) return "no LR reached the target";
  if (b.lrs < 2) return "one LR tried: no optimum";
  if (b.at_low_edge) return "smallest LR tried: optimum <= it";
  if (b.at_high_edge) return "largest LR tried: optimum >= it";
  if (b.censored) return "a pruned seed's lower bound: not proved slower here";
  return b.interpolated ? "interpolated" : "grid";
}

}  // namespace

const LrLaw* LrSection::MainLaw() const {
  for (const LrLaw& l : laws) {
    if (l.fitted) return &l;
  }
  return nullptr;
}

LrSection AnalyzeLr(const SweepData& sweep, const TargetSection& target,
                    const StudyOptions& options) {
  LrSection s;
  s.target = target.target.ToString();
  s.path = target.lr_search_path.empty() ? "lr.base" : target.lr_search_path;
  const std::vector<LrTrial> trials = LrTrialsOf(sweep.runs, target.hits, target.target, s.path);
  std::map<std::pair<std::string, int64_t>, std::set<double>> lrs;
  for (const LrTrial& t : trials) lrs[{t.others, t.batch_size}].insert(t.lr);
  for (const auto& [key, set] : lrs) s.varied = s.varied || set.size() >= 2;
  if (!s.varied) {
    s.status = FailedPreconditionError(fmt::format(
        "no batch size of sweep {} tried 2 or more values of {} that finished: the LR law needs an "
        "LR grid (\"{}\": [...]) or an lr_search at several batch sizes",
        sweep.name, s.path, s.path));
    return s;
  }
  LrLawOptions o;
  o.resamples = options.resamples;
  o.confidence = options.confidence;
  o.seed = options.seed;
  StatusOr<std::vector<LrLaw>> laws = EstimateLrLaws(trials, o);
  if (!laws.ok()) {
    s.status = laws.status();
    return s;
  }
  s.laws = std::move(*laws);
  return s;
}

std::vector<Table> LrTables(const LrSection& s) {
  Table per_b{"lr_law",
              "Best learning rate per batch size",
              {"others", "batch_size", "lrs", "seeds", "best_lr", "best_lr_low", "best_lr_high",
               "grid_best_lr", "steps", "law_lr", "pruned", "how"},
              {},
              {}};
  Table fit{"lr_law_fit",
            "Learning-rate law: eta_opt = c * B^alpha",
            {"others", "c", "alpha", "alpha_low", "alpha_high", "batch_sizes", "linear_alpha_1",
             "sqrt_alpha_half", "peak_batch"},
            {},
            {}};
  if (!s.status.ok()) {
    per_b.notes.push_back("Not computed: " + s.status.message());
    return {per_b};
  }
  for (const LrLaw& law : s.laws) {
    for (const BestLr& b : law.per_batch) {
      const std::optional<double> at = law.LrAt(b.batch_size);
      per_b.rows.push_back(
          {law.others, std::to_string(b.batch_size), std::to_string(b.lrs), std::to_string(b.seeds),
           b.reached ? FormatNumber(b.lr.value) : "-",
           b.reached && b.lr.available() ? FormatNumber(b.lr.low) : "-",
           b.reached && b.lr.available() ? FormatNumber(b.lr.high) : "-",
           b.reached ? FormatNumber(b.grid_lr) : "-",
           b.reached ? (b.censored ? ">=" : "") + FormatNumber(b.best_steps) : "-",
           at ? FormatNumber(*at) : "-", std::to_string(b.pruned), Edge(b)});
    }
    fit.rows.push_back({law.others, law.fitted ? FormatNumber(law.c) : "-",
                        law.fitted ? FormatNumber(law.alpha.value) : "-",
                        law.alpha.available() ? FormatNumber(law.alpha.low) : "-",
                        law.alpha.available() ? FormatNumber(law.alpha.high) : "-",
                        std::to_string(law.fit_points),
                        !law.alpha.available() ? "-" : law.linear_consistent ? "consistent" : "excluded",
                        !law.alpha.available() ? "-" : law.sqrt_consistent ? "consistent" : "excluded",
                        law.peak ? std::to_string(law.peak_batch) : "-"});
    fit.notes.push_back((law.others.empty() ? "" : law.others + ": ") + law.reading);
  }
  per_b.notes.push_back(fmt::format(
      "Per batch size, each value of {} scored by its mean steps to {} over seeds (an LR with a "
      "seed that missed it: not a candidate; a pruned seed counts as at least the step it stopped "
      "after, so its LR's mean is a lower bound, never a vertex neighbour; pruned: such seeds); "
      "best_lr: the parabola's vertex in log LR through the "
      "grid's best and its neighbours, else the grid's best; interval: {:s}; law_lr: c * B^alpha "
      "(docs/methods.md §11).",
      s.path, s.target,
      "expanded percentile bootstrap over seeds, holding at least the grid best's cell (one "
      "seed: that cell)"));
  return {per_b, fit};
}

nlohmann::json LrJson(const LrSection& s) {
  nlohmann::json j = {{"path", s.path}, {"target", s.target}};
  if (!s.status.ok()) {
    j["error"] = s.status.message();
    return j;
  }
  nlohmann::json laws = nlohmann::json::array();
  for (const LrLaw& law : s.laws) {
    nlohmann::json per = nlohmann::json::array();
    for (const BestLr& b : law.per_batch) {
      per.push_back({{"batch_size", b.batch_size},
                     {"lrs", b.lrs},
                     {"seeds", b.seeds},
                     {"reached", b.reached},
                     {"best_lr", b.reached ? Finite(b.lr.value) : nullptr},
                     {"low", b.reached && b.lr.available() ? Finite(b.lr.low) : nullptr},
                     {"high", b.reached && b.lr.available() ? Finite(b.lr.high) : nullptr},
                     {"grid_best_lr", b.reached ? Finite(b.grid_lr) : nullptr},
                     {"steps", b.reached ? Finite(b.best_steps) : nullptr},
                     {"steps_lower_bound", b.censored},
                     {"pruned_seeds", b.pruned},
                     {"interpolated", b.interpolated},
                     {"at_low_edge", b.at_low_edge},
                     {"at_high_edge", b.at_high_edge},
                     {"method", b.lr.method}});
    }
    nlohmann::json alpha = {{"value", law.fitted ? Finite(law.alpha.value) : nullptr},
                            {"low", law.alpha.available() ? Finite(law.alpha.low) : nullptr},
                            {"high", law.alpha.available() ? Finite(law.alpha.high) : nullptr},
                            {"confidence", law.alpha.confidence},
                            {"unavailable", law.alpha.unavailable}};
    laws.push_back({{"others", law.others},
                    {"per_batch_size", per},
                    {"fitted", law.fitted},
                    {"c", law.fitted ? Finite(law.c) : nullptr},
                    {"alpha", alpha},
                    {"batch_sizes_fitted", law.fit_points},
                    {"linear_consistent", law.linear_consistent},
                    {"sqrt_consistent", law.sqrt_consistent},
                    {"peak", law.peak},
                    {"peak_batch_size", law.peak ? nlohmann::json(law.peak_batch) : nullptr},
                    {"reading", law.reading}});
  }
  j["laws"] = laws;
  return j;
}

std::vector<std::string> LrLines(const LrSection& s) {
  if (!s.status.ok()) return {"No LR law: " + s.status.message()};
  std::vector<std::string> out;
  for (const LrLaw& law : s.laws) {
    out.push_back((law.others.empty() ? "" : law.others + ": ") + law.reading);
  }
  return out;
}

std::string LrRecommendation(const LrSection& s, int64_t batch) {
  const LrLaw* law = s.status.ok() ? s.MainLaw() : nullptr;
  if (law == nullptr || batch <= 0) return "";
  const BestLr* smallest = nullptr;
  const BestLr* here = nullptr;
  for (const BestLr& b : law->per_batch) {
    if (b.reached && smallest == nullptr) smallest = &b;
    if (b.batch_size == batch && b.reached && !b.at_low_edge && !b.at_high_edge) here = &b;
  }
  const std::optional<double> from_law = law->LrAt(batch);
  std::string lr;
  if (here != nullptr) {
    lr = fmt::format("{} [{}, {}], measured at this batch size", FormatNumber(here->lr.value),
                     FormatNumber(here->lr.low), FormatNumber(here->lr.high));
  } else if (from_law) {
    lr = fmt::format("{} from the measured law", FormatNumber(*from_law));
  } else {
    return fmt::format(
        "LR for B={}: no measured LR (past the peak at B = {}, where the best LR falls again); "
        "search it at this batch size.",
        batch, law->peak_batch);
  }
  std::string law_text =
      fmt::format("η_opt = {}·B^{}", FormatNumber(law->c), FormatNumber(law->alpha.value, 3));
  if (law->alpha.available()) {
    law_text += fmt::format(", α [{}, {}]", FormatNumber(law->alpha.low, 3),
                            FormatNumber(law->alpha.high, 3));
  }
  std::string rule;
  if (smallest != nullptr && smallest->batch_size != batch) {
    const double ratio = static_cast<double>(batch) / static_cast<double>(smallest->batch_size);
    rule = fmt::format("; from B={}'s best LR the linear rule would give {}, the square-root rule {}",
                       smallest->batch_size, FormatNumber(smallest->lr.value * ratio),
                       FormatNumber(smallest->lr.value * std::sqrt(ratio)));
  }
  return fmt::format("LR for B={}: {} ({}){}.", batch, lr, law_text, rule);
}

void SetRecommendationLrs(const LrSection& s, RecommendationSection* r) {
  if (r->measured.empty()) return;
  if (r->ChosenMeasured().status.ok()) {
    r->lr = LrRecommendation(s, r->ChosenMeasured().choice.batch_size);
  }
  if (!r->projected.empty() && r->ChosenProjected().status.ok()) {
    const std::string lr = LrRecommendation(s, r->ChosenProjected().choice.batch_size);
    if (!lr.empty()) r->projected_lr = "Projection: " + lr;
  }
}

}  // namespace batchlab::analysis
