// The recommended batch size and rank count (see recommendation.h, docs/methods.md).
#include "analysis/sections/recommendation.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include <fmt/core.h>

namespace batchlab::analysis {

namespace {

constexpr Preference kPreferences[] = {Preference::kTime, Preference::kCompute,
                                       Preference::kBalanced};

std::string Ranks(int k) { return fmt::format("{} rank{}", k, k == 1 ? "" : "s"); }

// The cost the preference minimises, then the tie-breaker.
std::pair<double, double> Cost(const Candidate& c, Preference p) {
  switch (p) {
    case Preference::kTime:
      return {c.seconds, c.compute};
    case Preference::kCompute:
      return {c.compute, c.seconds};
    case Preference::kBalanced:
      return {c.seconds * c.compute, c.seconds};
  }
  return {c.seconds, c.compute};
}

bool Usable(const Candidate& c) {
  return std::isfinite(c.seconds) && std::isfinite(c.compute) && c.seconds > 0 && c.compute > 0;
}

Recommendation Recommend(const std::vector<Candidate>& candidates, const CritSection& crit,
                         Preference prefer, bool projected, std::string basis,
                         const TargetSection& target) {
  Recommendation r;
  r.compute_unit = target.compute.unit;
  r.prefer = prefer;
  r.projected = projected;
  r.basis = std::move(basis);
  r.target = target.target.ToString();
  r.candidates = static_cast<int>(candidates.size());
  const std::optional<size_t> choice = Choose(candidates, prefer);
  const std::optional<size_t> base = Baseline(candidates);
  if (!choice || !base) {
    r.status = FailedPreconditionError(fmt::format(
        "no configuration reached the target {} with a measured time; run more steps (budget) or "
        "set an easier target (--target)",
        r.target));
    return r;
  }
  r.choice = candidates[*choice];
  r.baseline = candidates[*base];
  r.speedup = r.baseline.seconds / r.choice.seconds;
  r.compute_ratio = r.choice.compute / r.baseline.compute;
  if (crit.status.ok()) {
    r.b_crit = crit.fit.b_crit.value;
    r.doubling_saving = DoublingSaving(static_cast<double>(r.choice.batch_size), *r.b_crit);
  }
  return r;
}

nlohmann::json CandidateJson(const Candidate& c) {
  return {{"label", c.label},           {"run_id", c.run_id},    {"detail", c.detail},
          {"batch_size", c.batch_size}, {"ranks", c.world_size}, {"seeds", c.seeds},
          {"steps", c.steps},           {"seconds", c.seconds},  {"compute", c.compute}};
}

nlohmann::json OneJson(const Recommendation& r) {
  nlohmann::json j = {{"prefer", PreferenceName(r.prefer)},
                      {"basis", r.basis},
                      {"compute_unit", ComputeUnitName(r.compute_unit)},
                      {"projected", r.projected},
                      {"target", r.target},
                      {"candidates", r.candidates}};
  if (!r.status.ok()) {
    j["error"] = r.status.message();
    return j;
  }
  j["choice"] = CandidateJson(r.choice);
  j["baseline"] = CandidateJson(r.baseline);
  j["speedup"] = r.speedup;
  j["compute_ratio"] = r.compute_ratio;
  j["b_crit"] = r.b_crit ? nlohmann::json(*r.b_crit) : nlohmann::json(nullptr);
  j["doubling_saving"] =
      r.doubling_saving ? nlohmann::json(*r.doubling_saving) : nlohmann::json(nullptr);
  j["sentence"] = RecommendationSentence(r);
  if (r.projected) j["model_check"] = r.check;
  if (!r.incomparable.empty()) j["timings_incomparable"] = r.incomparable;
  return j;
}

}  // namespace

StatusOr<Preference> ParsePreference(const std::string& name) {
  for (Preference p : kPreferences) {
    if (name == PreferenceName(p)) return p;
  }
  return InvalidArgumentError(
      fmt::format("--prefer '{}': unknown preference; use time, compute or balanced", name));
}

const char* PreferenceName(Preference p) {
  switch (p) {
    case Preference::kTime:
      return "time";
    case Preference::kCompute:
      return "compute";
    case Preference::kBalanced:
      return "balanced";
  }
  return "balanced";
}

std::vector<Candidate> MeasuredCandidates(const TargetSection& target) {
  // (batch size, config key) -> the seeds' hits
  std::map<std::pair<int64_t, std::string>, std::vector<const TargetHit*>> groups;
  for (const TargetHit& h : target.hits) groups[{h.batch_size, h.config_key}].push_back(&h);
  const ComputeUnit unit = target.compute.unit;
  std::vector<Candidate> out;
  for (const auto& [key, seeds] : groups) {
    const bool all = std::all_of(seeds.begin(), seeds.end(), [](const TargetHit* h) {
      return h->status == HitStatus::kReached;
    });
    if (!all) continue;
    Candidate c;
    const TargetHit* fastest = seeds.front();
    for (const TargetHit* h : seeds) {
      c.steps += static_cast<double>(h->step);
      c.seconds += h->seconds;
      c.compute += ComputeIn(*h, unit);
      if (h->seconds < fastest->seconds) fastest = h;
    }
    const double n = static_cast<double>(seeds.size());
    c.steps /= n;
    c.seconds /= n;
    c.compute /= n;
    c.seeds = static_cast<int>(seeds.size());
    c.label = fastest->label;
    c.run_id = fastest->run_id;
    c.detail = fastest->detail;
    c.batch_size = fastest->batch_size;
    c.world_size = fastest->world_size;
    out.push_back(std::move(c));
  }
  std::sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) {
    return std::tie(a.batch_size, a.world_size, a.label) <
           std::tie(b.batch_size, b.world_size, b.label);
  });
  return out;
}

std::vector<Candidate> ProjectedCandidates(const ProjectionSection& projection,
                                           const TargetSection& target) {
  std::map<int64_t, double> flops_per_step;  // batch size -> of its best configuration's run
  for (const BatchBest& b : target.best) {
    if (b.best) flops_per_step[b.batch_size] = b.best->flops_per_step;
  }
  const bool flops = target.compute.unit == ComputeUnit::kFlops;
  std::vector<Candidate> out;
  for (const ProjectedPoint& p : projection.points) {
    Candidate c;
    c.label = fmt::format("B={} K={}", p.batch_size, p.world_size);
    c.batch_size = p.batch_size;
    c.world_size = p.world_size;
    c.steps = p.steps;
    c.seconds = p.time_to_target;
    c.compute = flops ? p.steps * flops_per_step[p.batch_size] : p.compute;
    if (p.here && !p.difference.empty()) {
      c.measured_note = fmt::format("measured here: {} s and {} steps",
                                    ProseNumber(p.here->time_to_target), ProseNumber(p.here->steps));
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::optional<size_t> Choose(const std::vector<Candidate>& candidates, Preference prefer) {
  std::optional<size_t> best;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (!Usable(candidates[i])) continue;
    if (!best || Cost(candidates[i], prefer) < Cost(candidates[*best], prefer)) best = i;
  }
  return best;
}

std::optional<size_t> Baseline(const std::vector<Candidate>& candidates) {
  std::optional<size_t> best;
  auto key = [](const Candidate& c) { return std::tie(c.batch_size, c.world_size, c.seconds); };
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (!Usable(candidates[i])) continue;
    if (!best || key(candidates[i]) < key(candidates[*best])) best = i;
  }
  return best;
}

double DoublingSaving(double batch_size, double b_crit) {
  return b_crit / (2 * (batch_size + b_crit));
}

Recommendation RecommendMeasured(const TargetSection& target, const CritSection& crit,
                                 Preference prefer) {
  return Recommend(MeasuredCandidates(target), crit, prefer, false, "measured", target);
}

Recommendation RecommendProjected(const ProjectionSection& projection, const TargetSection& target,
                                  const CritSection& crit, Preference prefer) {
  const std::string basis = "projected: " + projection.profile.name;
  if (!projection.status.ok()) {
    Recommendation r;
    r.prefer = prefer;
    r.projected = true;
    r.basis = basis;
    r.target = target.target.ToString();
    r.compute_unit = target.compute.unit;
    r.profile = projection.profile.name;
    r.status = projection.status;
    return r;
  }
  Recommendation r =
      Recommend(ProjectedCandidates(projection, target), crit, prefer, true, basis, target);
  r.profile = projection.profile.name;
  r.check = projection.check.Sentence();
  return r;
}

std::string RecommendationSentence(const Recommendation& r) {
  const std::string head =
      r.projected ? fmt::format("PROJECTION ({}, a model, not a measurement): ", r.profile)
                  : std::string();
  if (!r.status.ok()) return head + "no recommendation: " + r.status.message();
  const Candidate& c = r.choice;
  const Candidate& b = r.baseline;
  const char* unit = ComputeUnitName(r.compute_unit);
  auto where = [](const Candidate& x) {
    return fmt::format("B={} on {}{}", x.batch_size, Ranks(x.world_size),
                       x.detail.empty() ? "" : " (" + x.detail + ")");
  };
  std::string s = head + where(c);
  if (c.batch_size == b.batch_size && c.world_size == b.world_size && c.detail == b.detail) {
    s += fmt::format(": the smallest batch is also the best for {}: {} s and {} {} to {}",
                     PreferenceName(r.prefer), ProseNumber(c.seconds), ProseNumber(c.compute), unit,
                     r.target);
  } else {
    s += fmt::format(": {}x {} to {} than {}, for {}x the compute ({} s vs {} s; {} vs {} {})",
                     ProseNumber(r.speedup >= 1 ? r.speedup : 1 / r.speedup),
                     r.speedup >= 1 ? "faster" : "slower", r.target, where(b),
                     ProseNumber(r.compute_ratio), ProseNumber(c.seconds), ProseNumber(b.seconds),
                     ProseNumber(c.compute), ProseNumber(b.compute), unit);
    if (c.steps > 0 && b.steps > 0) {
      s += fmt::format(", {} steps vs {}", ProseNumber(c.steps), ProseNumber(b.steps));
    }
  }
  const char* why = r.prefer == Preference::kTime      ? "least time to target"
                    : r.prefer == Preference::kCompute ? "least compute to target"
                                                       : "least time x compute";
  s += fmt::format("; prefer {}: {} of {} {}configurations.", PreferenceName(r.prefer), why,
                   r.candidates, r.projected ? "projected " : "measured ");
  std::string differs;
  for (const Candidate* x : {&c, &b}) {
    if (x->measured_note.empty() || (x == &b && b.label == c.label)) continue;
    differs += fmt::format("{}B={} on {} was {}", differs.empty() ? "" : "; ", x->batch_size,
                           Ranks(x->world_size), x->measured_note);
  }
  if (!differs.empty()) {
    s += " Not what was measured: " + differs +
         " (the projection table's notes give each difference its reason).";
  }
  if (r.projected && !r.check.empty()) s += " " + r.check;
  if (!r.incomparable.empty()) {
    s += " Timings not comparable: " + r.incomparable +
         ", so the speed-up and the compute ratio are not those of the batch size and rank count "
         "alone (docs/methods.md, \"Same conditions\").";
  }
  return s;
}

void MarkIncomparableTimings(const std::vector<RunTiming>& timings, RecommendationSection* s) {
  for (Recommendation& r : s->measured) {
    if (!r.status.ok() || r.choice.run_id == r.baseline.run_id) continue;
    r.incomparable = TimingsDiffer(timings, r.choice.run_id, r.baseline.run_id);
  }
}

std::string CritSentence(const Recommendation& r) {
  if (!r.status.ok() || !r.b_crit) return "";
  return fmt::format(
      "Beyond B~{} (B_crit) doubling the batch saves at most 25% of the steps (S = S_min(1 + "
      "B_crit/B)); from B={} it saves {}%.",
      ProseNumber(*r.b_crit), r.choice.batch_size, ProseNumber(100 * *r.doubling_saving));
}

RecommendationSection AnalyzeRecommendation(const TargetSection& target, const CritSection& crit,
                                            const ProjectionSection& projection,
                                            Preference prefer) {
  RecommendationSection s;
  s.prefer = prefer;
  for (Preference p : kPreferences) {
    s.measured.push_back(RecommendMeasured(target, crit, p));
    s.projected.push_back(RecommendProjected(projection, target, crit, p));
  }
  return s;
}

std::vector<std::string> RecommendationLines(const RecommendationSection& s) {
  std::vector<std::string> out = {RecommendationSentence(s.ChosenMeasured())};
  const std::string crit = CritSentence(s.ChosenMeasured());
  if (!crit.empty()) out.push_back(crit);
  if (!s.lr.empty()) out.push_back(s.lr);
  out.push_back(RecommendationSentence(s.ChosenProjected()));
  if (!s.projected_lr.empty()) out.push_back(s.projected_lr);
  return out;
}

Table RecommendationTable(const RecommendationSection& s) {
  const char* unit = ComputeUnitName(s.measured.empty() ? ComputeUnit::kRankSeconds
                                                        : s.measured.front().compute_unit);
  Table t{"recommendation",
          fmt::format("Recommended batch size and rank count (compute in {})", unit),
          {"basis", "prefer", "batch_size", "ranks", "train_seconds", "compute", "speedup",
           "compute_ratio", "vs"},
          {},
          {}};
  for (const auto* group : {&s.measured, &s.projected}) {
    for (const Recommendation& r : *group) {
      if (!r.status.ok()) continue;
      t.rows.push_back(
          {r.basis,
           std::string(PreferenceName(r.prefer)) + (r.prefer == s.prefer ? " (chosen)" : ""),
           std::to_string(r.choice.batch_size), std::to_string(r.choice.world_size),
           results::ExactNumber(r.choice.seconds), results::ExactNumber(r.choice.compute),
           results::ExactNumber(r.speedup), results::ExactNumber(r.compute_ratio),
           fmt::format("B={} K={}", r.baseline.batch_size, r.baseline.world_size)});
    }
  }
  t.notes = RecommendationLines(s);
  t.notes.push_back(
      fmt::format("speedup = time to target of the smallest batch size (fewest ranks) / this "
                  "one's; compute_ratio = this one's {} / the smallest batch's. balanced = least "
                  "time x compute. Projected rows are a model (see the projection table), not "
                  "measurements. {}.",
                  unit, kTrainSecondsDefinition));
  return t;
}

nlohmann::json RecommendationJson(const RecommendationSection& s) {
  nlohmann::json j = {{"prefer", PreferenceName(s.prefer)},
                      {"compute_unit", ComputeUnitName(s.ChosenMeasured().compute_unit)},
                      {"measured", OneJson(s.ChosenMeasured())},
                      {"projected", OneJson(s.ChosenProjected())}};
  if (!s.lr.empty()) j["lr"] = s.lr;
  if (!s.projected_lr.empty()) j["projected_lr"] = s.projected_lr;
  j["all"] = nlohmann::json::array();
  for (const auto* group : {&s.measured, &s.projected}) {
    for (const Recommendation& r : *group) j["all"].push_back(OneJson(r));
  }
  return j;
}

}  // namespace batchlab::analysis
