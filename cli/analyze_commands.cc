// `batchlab analyze gns|target|crit|lr|pareto|sync|scaling|project|recommend --sweep NAME
// [--format table|csv|json]`: loads one sweep read-only and prints one analysis section
// (analysis/sections/study.h); each subcommand has only the flags its section reads.
//
//   batchlab --db batchlab.db analyze crit --sweep quickstart --target 'test_accuracy>=0.85'
//   batchlab analyze project --sweep quickstart --profile ib-400g --format json
//   batchlab analyze recommend --sweep quickstart --prefer time
#include <memory>
#include <string>

#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include "analysis/sections/critical_batch_branched_section.h"
#include "analysis/sections/lr_law_section.h"
#include "analysis/sections/recommendation.h"
#include "analysis/sections/schedule_compare.h"
#include "analysis/sections/study.h"
#include "analysis/data/sweep_data.h"
#include "analysis/sections/sync_modes.h"
#include "base/run_protocol.h"
#include "cli/commands.h"
#include "cli/shared_flags.h"

namespace batchlab::cli {

namespace {

// analyze schedules: the final train loss is the mean of this many last step losses.
constexpr int kScheduleSmoothSteps = 20;


struct AnalyzeFlags {
  std::string sweep;
  analysis::CbsSectionOptions cbs;  // analyze cbs
  int version = 0;
  std::string format = "table";
  bool series = false;
  analysis::StudyOptions study;
};

// Table: every table of the section; CSV and JSON Lines: its first (main) table.
void PrintTables(const std::vector<analysis::Table>& tables, const std::string& format) {
  if (tables.empty()) return;
  if (format == "csv") {
    fmt::print("{}", tables.front().ToCsv());
    return;
  }
  bool first = true;
  for (const analysis::Table& t : tables) {
    fmt::print("{}{}", first ? "" : "\n", t.ToText());
    first = false;
  }
}

StatusOr<analysis::SweepData> Load(const AnalyzeFlags& f, const std::string& db_path) {
  using namespace analysis;
  const StudyOptions& o = f.study;
  LoadOptions load;
  load.version = f.version;
  load.metrics = AnalysisMetrics(o.target.empty() ? protocol::kMetricTestAccuracy
                                                  : ParseTarget(o.target)->metric);
  BATCHLAB_ASSIGN_OR_RETURN(SweepData sweep, LoadSweep(db_path, f.sweep, load));
  if (o.target.empty() && !sweep.target.empty()) {
    // The configured target may name a metric outside the default set: reload it if so.
    const std::string m = ParseTarget(sweep.target).ok() ? ParseTarget(sweep.target)->metric : "";
    if (!m.empty() && m != protocol::kMetricTestAccuracy && m != protocol::kMetricTestLoss &&
        m != protocol::kMetricLoss) {
      load.metrics = AnalysisMetrics(m);
      BATCHLAB_ASSIGN_OR_RETURN(sweep, LoadSweep(db_path, f.sweep, load));
    }
  }
  return sweep;
}

// `analyze cbs`: the critical batch size over training of a branch study (analysis/sections/critical_batch_branched_section.h).
Status RunCbs(const AnalyzeFlags& f, const std::string& db_path) {
  using namespace analysis;
  CbsSectionOptions o = f.cbs;
  o.cbs.resamples = f.study.resamples;
  o.cbs.confidence = f.study.confidence;
  o.cbs.seed = f.study.seed;
  LoadOptions load;
  load.version = f.version;
  load.metrics = AnalysisMetrics(o.metric);
  BATCHLAB_ASSIGN_OR_RETURN(SweepData sweep, LoadSweep(db_path, f.sweep, load));
  const CbsSection s = AnalyzeCbs(sweep, o);
  if (s.points.empty()) {
    return FailedPreconditionError(fmt::format(
        "sweep {} has no finished branch runs{}; a branch study's spec has a \"branch\" section "
        "(docs/spec.md, Branch study)",
        f.sweep, s.problems.empty() ? "" : " that could be estimated: " + s.problems.front()));
  }
  if (f.format == "json") {
    nlohmann::json j = {{"sweep", sweep.name}, {"version", sweep.version}, {"analysis", "cbs"}};
    j["cbs"] = CbsJson(s);
    fmt::print("{}\n", j.dump(2));
    return OkStatus();
  }
  const std::vector<Table> tables = CbsTables(s);
  if (f.format == "csv") {
    PrintTables(tables, f.format);
    return OkStatus();
  }
  fmt::print("Sweep {} (version {}), {} runs\n\n", sweep.name, sweep.version, sweep.runs.size());
  for (const std::string& line : CbsLines(s)) fmt::print("{}\n", line);
  fmt::print("\n");
  PrintTables(tables, f.format);
  return OkStatus();
}

Status Run(const std::string& what, const AnalyzeFlags& f, const std::string& db_path) {
  using namespace analysis;
  const StudyOptions& o = f.study;
  if (!(o.beta >= 0 && o.beta < 1)) {
    return InvalidArgumentError(fmt::format("--beta {} must be in [0, 1), e.g. 0.99", o.beta));
  }
  if (o.to_step < o.from_step) {
    return InvalidArgumentError(
        fmt::format("--to-step {} is before --from-step {}", o.to_step, o.from_step));
  }
  if (!o.target.empty()) BATCHLAB_RETURN_IF_ERROR(ParseTarget(o.target).status());
  if (what == "project" || what == "recommend") {
    BATCHLAB_RETURN_IF_ERROR(FindClusterProfile(o.profile).status());
  }
  BATCHLAB_ASSIGN_OR_RETURN(const Preference prefer, ParsePreference(o.prefer));
  if (what == "cbs") return RunCbs(f, db_path);
  BATCHLAB_ASSIGN_OR_RETURN(const SweepData sweep, Load(f, db_path));
  nlohmann::json j = {{"sweep", sweep.name}, {"version", sweep.version}, {"analysis", what}};
  std::vector<Table> tables;
  std::vector<std::string> headline;  // printed above the tables

  if (what == "schedules") {
    const ScheduleSection s = CompareSchedules(sweep, kScheduleSmoothSteps);
    j["schedules"] = nlohmann::json::parse(ScheduleTable(s).ToJson());
    j["readings"] = s.readings;
    tables = {ScheduleTable(s)};
    headline = s.readings;
    if (sweep.scheduled.empty()) {
      headline.insert(headline.begin(),
                      "No run of this sweep has a batch_schedule (docs/spec.md, Batch-size "
                      "schedules): nothing to compare.");
    }
  } else if (what == "gns") {
    GnsSection gns = AnalyzeGns(sweep, o);
    j["gns"] = GnsJson(gns, o, f.series);
    tables = GnsTables(gns, o);
  } else if (what == "scaling") {
    ScalingSection s = AnalyzeScaling(sweep, o);
    j["scaling"] = ScalingJson(s);
    tables = ScalingTables(s);
  } else {
    BATCHLAB_ASSIGN_OR_RETURN(TargetSection target, AnalyzeTarget(sweep, o));
    for (const std::string& w : target.warnings) fmt::print(stderr, "batchlab: warning: {}\n", w);
    if (what == "target") {
      j["target"] = TargetJson(target);
      tables = TargetTables(target);
    } else if (what == "crit") {
      CritSection crit = AnalyzeCrit(target, AnalyzeGns(sweep, o), o);
      crit.tokens_per_sequence = TokensPerSequence(sweep);
      j["crit"] = CritJson(crit);
      tables = CritTables(crit);
      std::vector<Table> best = TargetTables(target);
      tables.push_back(best.front());
    } else if (what == "lr") {
      const LrSection lr = AnalyzeLr(sweep, target, o);
      if (!lr.status.ok()) return lr.status;
      j["lr"] = LrJson(lr);
      tables = LrTables(lr);
      headline = LrLines(lr);
    } else if (what == "sync") {
      const SyncSection sync = AnalyzeSync(sweep, target.hits, target.target);
      j["sync"] = SyncJson(sync);
      tables = {SyncTable(sync)};
    } else if (what == "pareto") {
      ParetoSection p = AnalyzePareto(target);
      MarkIncomparableTimings(RunTimings(sweep.runs, o.skip_steps), target, &p);
      j["pareto"] = ParetoJson(p);
      tables = ParetoTables(p);
    } else if (what == "project" || what == "recommend") {
      ScalingSection s = AnalyzeScaling(sweep, o);
      ProjectionSection p = AnalyzeProjection(sweep, target, s, o);
      // A bad flag (e.g. --device-speedup) is the user's error: report it as such.
      if (p.status.code() == StatusCode::kInvalidArgument) return p.status;
      if (what == "project") {
        j["projection"] = ProjectionJson(p);
        tables = ProjectionTables(p);
      } else {
        const CritSection crit = AnalyzeCrit(target, GnsSection{}, o);
        RecommendationSection r = AnalyzeRecommendation(target, crit, p, prefer);
        MarkIncomparableTimings(s.timings, &r);
        SetRecommendationLrs(AnalyzeLr(sweep, target, o), &r);
        j["recommendation"] = RecommendationJson(r);
        headline = RecommendationLines(r);
        tables = {RecommendationTable(r)};
        tables.front().notes.clear();
      }
    }
  }
  if (f.format == "json") {
    fmt::print("{}\n", j.dump(2));
  } else if (f.format == "csv") {
    PrintTables(tables, f.format);
  } else {
    fmt::print("Sweep {} (version {}), {} runs\n\n", sweep.name, sweep.version,
               sweep.runs.size() + sweep.scheduled.size());
    for (const std::string& line : headline) fmt::print("{}\n", line);
    if (!headline.empty()) fmt::print("\n");
    PrintTables(tables, f.format);
  }
  return OkStatus();
}

}  // namespace

void AddAnalyzeCommands(CLI::App& app, CliContext& ctx) {
  auto* analyze =
      app.add_subcommand("analyze", "Noise scale, critical batch, Pareto, scaling, recommendation");
  AddVersionFlag(*analyze);
  analyze->require_subcommand(1);
  struct Kind {
    const char* name;
    const char* help;
    unsigned flags;
  };
  const Kind kinds[] = {
      {"gns", "Gradient noise scale B_simple per run (McCandlish et al. 2018, App. A)",
       kGnsFlags | kBootstrapFlags},
      {"target", "Steps, samples, seconds and compute to the target; best per batch size",
       kTargetFlag},
      {"crit", "Critical batch size: fit of S = S_min(1 + B_crit/B), with bootstrap CI",
       kTargetFlag | kGnsFlags | kBootstrapFlags},
      {"pareto", "Pareto frontier of time vs compute to the target", kTargetFlag},
      {"lr",
       "The learning-rate law: best LR per batch size with an interval, eta_opt = c*B^alpha "
       "with alpha's interval, a peak where the best LR falls again",
       kTargetFlag | kBootstrapFlags},
      {"sync",
       "Synchronization modes side by side: steps, time and compute to the target, wait, "
       "staleness, effective batch (with and without a straggler)",
       kTargetFlag},
      {"scaling",
       "Throughput, strong/weak scaling efficiency with intervals, comm fraction, alpha-beta fit",
       kTimingFlags | kBootstrapFlags},
      {"project", "MODEL: time per step and to target on K = 1..1024 nodes of a cluster profile",
       kTargetFlag | kTimingFlags | kProjectionFlags},
      {"recommend",
       "The batch size and rank count to use (measured, and projected on a cluster profile)",
       kTargetFlag | kBootstrapFlags | kTimingFlags | kProjectionFlags | kPreferFlag},
      {"schedules",
       "Batch-size schedules against constant batches: steps, samples, target and final loss "
       "side by side",
       0},
      {"cbs",
       "Critical batch size over training from a branch study (Merrill et al. 2025), with "
       "intervals, and the batch-size schedule it recommends",
       kBootstrapFlags},
  };
  for (const Kind& kind : kinds) {
    auto flags = std::make_shared<AnalyzeFlags>();
    auto* cmd = analyze->add_subcommand(kind.name, kind.help);
    AddVersionFlag(*cmd);
    cmd->add_option("--sweep", flags->sweep, "Sweep name")->required();
    cmd->add_option("--sweep-version", flags->version, "Sweep version (default: the latest)")
        ->check(CLI::PositiveNumber);
    AddFormatOption(*cmd, flags->format, {"table", "csv", "json"},
                    "table, csv (the main table) or json");
    if (std::string(kind.name) == "gns") {
      cmd->add_flag("--series", flags->series, "Include each run's smoothed series (json)");
    }
    if (std::string(kind.name) == "cbs") {
      cmd->add_option("--tolerance", flags->cbs.tolerance,
                      "Loss gap to the smallest branch batch still counted as recovered "
                      "(epsilon; default: the spec's branch.tolerance, else 0.01)")
          ->check(CLI::Range(0.0, 10.0));
      cmd->add_option("--metric", flags->cbs.metric, "The branches' loss: test_loss or loss")
          ->capture_default_str()
          ->check(CLI::IsMember(
              std::vector<std::string>{protocol::kMetricTestLoss, protocol::kMetricLoss}));
      cmd->add_option("--smooth", flags->cbs.smooth,
                      "Last evaluations averaged per branch (default: the spec's "
                      "branch.smooth_evals, else 1)")
          ->check(CLI::Range(1, 1000));
      cmd->add_option("--margin", flags->cbs.margin,
                      "The schedule doubles the batch when B_crit's low end reaches margin x it")
          ->capture_default_str()
          ->check(CLI::Range(1.0, 100.0));
    }
    AddStudyFlags(*cmd, flags->study, kind.flags);
    const std::string what = kind.name;
    cmd->callback([flags, what, &ctx] { ctx.status = Run(what, *flags, ctx.db_path); });
  }
}

}  // namespace batchlab::cli
