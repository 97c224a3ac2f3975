// `batchlab sweep run|plan|status|list`: thin glue over the orchestrator library.
//
//   batchlab sweep plan sweeps/quickstart.json            # expanded runs and resources, runs
//   nothing batchlab sweep run sweeps/quickstart.json --slots 2   # runs (or resumes) the sweep
//   batchlab sweep status quickstart                      # read-only, from another shell
//
// A bad spec exits 2 before the database is opened; failed runs exit 1 (re-running resumes).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "base/count_text.h"
#include "cli/commands.h"
#include "cli/shared_flags.h"
#include "cli/live_status.h"
#include "orchestrator/spec/config_validation.h"
#include "orchestrator/spec/expansion.h"
#include "orchestrator/plan/gpu_slots.h"
#include "orchestrator/launch/local_launcher.h"
#include "orchestrator/launch/runner_locator.h"
#include "orchestrator/plan/scheduler.h"
#include "orchestrator/process/signal_watcher.h"
#include "orchestrator/launch/slurm_launcher.h"
#include "orchestrator/launch/slurm_elastic.h"
#include "orchestrator/launch/slurm_preflight.h"
#include "orchestrator/spec/spec.h"
#include "orchestrator/execute/sweep_executor.h"
#include "orchestrator/launch/worker_pool.h"
#include "results/database.h"
#include "results/number_format.h"
#include "results/run_query.h"
#include "results/schema.h"
#include "results/store.h"
#include "results/table_writer.h"

namespace batchlab::cli {
namespace {

namespace orch = batchlab::orchestrator;

int DefaultSlots() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

struct RunFlags {
  std::string spec_path;
  int slots = DefaultSlots();
  std::optional<int> gpus;  // default: this machine's (orchestrator/plan/gpu_slots.h, DetectGpus)
  std::string runs_dir = "runs";
  std::string backend = "local";
  std::string runner;
  std::optional<long long> max_runs;
  bool new_version = false;
  bool no_validate = false;
  // reuse: warm workers (orchestrator/launch/worker_pool.h; under Slurm, job packing); fresh: cold
  std::string workers = "reuse";
  bool force = false;  // run a target its metric can never meet (ExpandOptions)
};

struct PlanFlags {
  std::string spec_path;
  int slots = DefaultSlots();
  std::optional<int> gpus;
  std::optional<long long> max_runs;
  std::string format = "table";
  bool json = false;  // the old spelling of --format json
  std::string runner;
  bool no_validate = false;
  bool validate = false;  // also start user programs with "validate": true (never by default)
  bool force = false;     // plan a target its metric can never meet (ExpandOptions)
};

StatusOr<std::pair<orch::Spec, orch::Plan>> LoadAndExpand(const std::string& path,
                                                          std::optional<long long> max_runs,
                                                          bool force) {
  BATCHLAB_ASSIGN_OR_RETURN(orch::Spec spec, orch::LoadSpecFile(path));
  orch::ExpandOptions opts;
  opts.max_runs = max_runs;
  opts.allow_unreachable_target = force;
  auto plan = orch::ExpandSpec(spec, opts);
  if (!plan.ok()) return plan.status().WithContext(path);
  if (plan->runs.empty()) {
    // Nothing to run is a mistake in the spec, not an empty version of the sweep.
    std::string by;
    for (const auto& [label, n] : plan->dropped) {
      if (n > 0) by += fmt::format("{}{} by {}", by.empty() ? "" : ", ", n, label);
    }
    return InvalidArgumentError(fmt::format(
        "{}: constraints: every one of the {} points is dropped ({}); nothing to run: loosen "
        "`constraints`",
        path, plan->points, by.empty() ? "no point left" : by));
  }
  // slurm.elastic: every run must be able to go on at every node count it may get.
  BATCHLAB_RETURN_IF_ERROR(orch::CheckElastic(spec.slurm, *plan).WithContext(path));
  return std::make_pair(std::move(spec), std::move(plan).value());
}

// The executables the plan needs: batchlab-runner when a run uses it, batchlab-rank when a run
// is a user program.
StatusOr<orch::LaunchTools> LocateTools(const orch::Plan& plan, const std::string& runner_flag) {
  bool builtin = false, user = false;
  for (const auto& r : plan.runs) (r.program.builtin ? builtin : user) = true;
  orch::LaunchTools tools;
  if (builtin || !runner_flag.empty()) {
    BATCHLAB_ASSIGN_OR_RETURN(tools.runner, orch::LocateRunner(runner_flag));
  }
  if (user) {
    BATCHLAB_ASSIGN_OR_RETURN(tools.rank_exec, orch::LocateRankExec());
  }
  return tools;
}

// "batchlab-runner /path" or the user programs' commands, for the start line.
std::string ProgramsText(const orch::Plan& plan, const orch::LaunchTools& tools) {
  std::set<std::string> names;
  for (const auto& r : plan.runs) {
    if (r.program.builtin) {
      names.insert(tools.runner);
      continue;
    }
    std::string cmd;
    for (const auto& a : r.program.command) cmd += (cmd.empty() ? "" : " ") + a;
    names.insert(cmd);
  }
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : "; ") + n;
  return out;
}

// The pool's GPUs: --gpus, else this machine's (CUDA_VISIBLE_DEVICES, else /dev/nvidia<N>).
StatusOr<int> PoolGpus(const std::optional<int>& flag) {
  if (flag && *flag < 0) {
    return InvalidArgumentError(fmt::format("--gpus {}: must be 0 or more", *flag));
  }
  return flag ? *flag : orch::DetectGpus();
}

// Under Slurm an idle warm worker holds nodes: one given no run for this long is retired. Long
// enough for the executor to hand over the next run of the shape (it polls every 0.5 s).
constexpr double kSlurmIdleWorkerSeconds = 30;

// The launcher for --backend and --workers: mpirun or sbatch jobs, behind the warm-worker pool
// with --workers reuse. Under Slurm the pool packs runs of one shape into one allocation, its
// folders under <runs-dir>/.workers (the compute nodes must see them).
StatusOr<std::unique_ptr<orch::Launcher>> MakeLauncher(const RunFlags& f, const orch::Spec& spec,
                                                       const orch::LaunchTools& tools) {
  std::unique_ptr<orch::Launcher> launcher;
  orch::WorkerPoolSettings pool;
  pool.runner = tools.runner;
  pool.max_workers = f.slots;
  if (f.backend == "local") {
    orch::LocalLaunchSettings s;
    s.pool_slots = f.slots;
    s.env = spec.launch.env;
    s.mpirun_args = spec.launch.mpirun_args;
    launcher = orch::MakeLocalLauncher(std::move(s));
  } else {
    orch::SlurmLaunchSettings s;
    s.env = spec.launch.env;
    s.mpirun_args = spec.launch.mpirun_args;
    s.slurm = spec.slurm;
    BATCHLAB_ASSIGN_OR_RETURN(launcher, orch::MakeSlurmLauncher(std::move(s)));
    pool.dir = (std::filesystem::path(f.runs_dir) / ".workers").string();
    pool.allocation_seconds = spec.slurm.time_limit_minutes * 60.0;
    pool.idle_seconds = kSlurmIdleWorkerSeconds;
    pool.idle_workers_hold_nodes = true;
  }
  // slurm.elastic: each attempt is its own job, whose node count Slurm may lower (a warm worker
  // keeps one shape), so its runs start cold.
  const bool elastic = f.backend == "slurm" && spec.slurm.elastic.has_value();
  if (f.workers == "reuse" && !elastic) {
    launcher = orch::MakeWorkerPool(std::move(launcher), std::move(pool));
  }
  return launcher;
}

// The folders MakeRunsFolder created (the missing ones on the way to the runs folder, deepest
// last), so a refused start can take them away again.
struct MadeFolders {
  std::vector<std::filesystem::path> created;
  // Removes the folders made, deepest first, each only while empty.
  void Undo() {
    for (auto it = created.rbegin(); it != created.rend(); ++it) {
      std::error_code ec;
      std::filesystem::remove(*it, ec);  // removes an empty folder only
    }
  }
};

// Creates `runs_dir` and any missing parent; an existing non-folder is bad input.
StatusOr<MadeFolders> MakeRunsFolder(const std::string& runs_dir) {
  MadeFolders made;
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::absolute(runs_dir, ec).lexically_normal();
  if (!dir.has_filename()) dir = dir.parent_path();  // "runs/"
  for (std::filesystem::path p = dir; !p.empty() && !std::filesystem::exists(p, ec);
       p = p.parent_path()) {
    made.created.insert(made.created.begin(), p);
    if (p == p.parent_path()) break;
  }
  std::filesystem::create_directories(runs_dir, ec);
  if (!std::filesystem::is_directory(runs_dir, ec)) {
    made.Undo();
    return InvalidArgumentError(fmt::format(
        "--runs-dir {}: is not a folder and cannot be created as one; pass a folder (it is "
        "created if absent)",
        runs_dir));
  }
  return made;
}

Status RunSweep(const RunFlags& f, CliContext& ctx) {
  // Everything that can be wrong with the input is checked before the database is opened.
  BATCHLAB_ASSIGN_OR_RETURN(auto loaded, LoadAndExpand(f.spec_path, f.max_runs, f.force));
  auto& [spec, plan] = loaded;
  if (f.slots < 1) return InvalidArgumentError("--slots: must be at least 1");
  // GPUs: counted on the local pool (--gpus, default this machine's); under Slurm only when
  // --gpus is given (a cap on the GPUs in flight), as the cluster allocates them otherwise.
  BATCHLAB_ASSIGN_OR_RETURN(const int gpus, PoolGpus(f.gpus));
  const bool count_gpus = f.backend == "local" || f.gpus.has_value();
  if (count_gpus) {
    BATCHLAB_RETURN_IF_ERROR(orch::CheckGpuNeeds(spec, plan, gpus).WithContext(f.spec_path));
  }
  BATCHLAB_ASSIGN_OR_RETURN(orch::LaunchTools tools, LocateTools(plan, f.runner));
  if (!f.no_validate) {
    BATCHLAB_RETURN_IF_ERROR(
        orch::ValidateResolvedConfigs(plan.runs, tools, spec.launch.env).WithContext(f.spec_path));
  }
  BATCHLAB_ASSIGN_OR_RETURN(std::unique_ptr<orch::Launcher> launcher, MakeLauncher(f, spec, tools));
  if (f.backend == "slurm") {
    // Pre-flight: a run the partition can never hold is refused before anything is submitted.
    BATCHLAB_ASSIGN_OR_RETURN(orch::PartitionCapacity cap,
                              orch::QueryPartition(spec.slurm.partition));
    BATCHLAB_RETURN_IF_ERROR(
        orch::CheckPartitionFits(plan, spec.slurm, cap).WithContext(f.spec_path));
  }

  // The runs folder must be a folder (created if absent) before the database is created; a
  // start refused by the database (not batchlab's, newer schema, locked) leaves no folder behind.
  BATCHLAB_ASSIGN_OR_RETURN(MadeFolders made, MakeRunsFolder(f.runs_dir));
  auto store = results::Store::Open(ctx.db_path);
  if (!store.ok()) {
    made.Undo();
    return store.status();
  }
  orch::SignalWatcher signals;
  orch::ProgressPrinter progress(stderr, isatty(fileno(stderr)) != 0, spec.name);
  progress.SetDetail(RunningRunsDetail(ctx.db_path, spec.name));
  orch::ExecutorOptions opts;
  opts.slots = f.slots;
  opts.gpus = count_gpus ? gpus : -1;
  opts.runs_dir = f.runs_dir;
  opts.new_version = f.new_version;
  opts.stop_requested = [&signals] { return signals.requested(); };
  opts.progress = &progress;
  opts.tools = tools;
  if (f.backend == "slurm") opts.poll_seconds = 0.5;
  fmt::print(stderr, "[{}] {} on {} slot(s){}, backend {}, runner {}\n", spec.name,
             Count(static_cast<long long>(plan.runs.size()), "run"), f.slots, count_gpus ? fmt::format(" and {} GPU(s)", gpus) : "",
             launcher->name(), ProgramsText(plan, tools));
  BATCHLAB_ASSIGN_OR_RETURN(orch::SweepOutcome out,
                            orch::ExecuteSweep(spec, plan, **store, *launcher, opts));
  progress.Finish();
  if (!out.extended.empty()) {
    fmt::print(stderr, "[{}] version {} extended: {}\n", spec.name, out.version, out.extended);
  }
  fmt::print(stderr,
             "[{}] version {}: {}: {} finished now, {} pruned{}, {} skipped (already finished){}, "
             "{} failed, {} cancelled; {}; wall {} s, lower bound {} s\n",
             spec.name, out.version, Count(out.total, "run"), out.succeeded, out.pruned,
             out.stalled > 0 ? fmt::format(", {} stalled", out.stalled) : "", out.skipped,
             out.earlier_unfinished > 0
                 ? fmt::format(", {} not run (unfinished runs of an earlier version)",
                               out.earlier_unfinished)
                 : "",
             out.failed,
             out.cancelled, Count(out.attempts, "attempt"), results::FixedNumber(out.wall_seconds, 1),
             results::FixedNumber(out.lower_bound_seconds, 1));
  if (spec.lr_search.enabled) {
    fmt::print(stderr,
               "[{}] LR search: {} round(s) added by this run; `batchlab analyze target --sweep "
               "{}` shows the LR found per batch size\n",
               spec.name, out.search_rounds, spec.name);
  }
  if (out.stopped) {
    ctx.stopped_by_signal = signals.signal_number();
    return CancelledError(fmt::format(
        "sweep {} stopped by signal {} ({}): {} run(s) cancelled; run the same command to resume",
        spec.name, signals.signal_number(), strsignal(signals.signal_number()), out.cancelled));
  }
  if (out.failed > 0) {
    return UnavailableError(fmt::format(
        "{} of {} runs of sweep {} failed (see `batchlab results list --sweep {}` and the logs "
        "under {}/{}/); run the same command to retry them",
        out.failed, out.total, spec.name, spec.name, f.runs_dir, spec.name));
  }
  return OkStatus();
}

Status PlanSweep(const PlanFlags& f) {
  BATCHLAB_ASSIGN_OR_RETURN(auto loaded, LoadAndExpand(f.spec_path, f.max_runs, f.force));
  auto& [spec, plan] = loaded;
  // A run needing more GPUs than the pool could never start (as `sweep run` refuses it).
  BATCHLAB_ASSIGN_OR_RETURN(const int gpus, PoolGpus(f.gpus));
  BATCHLAB_RETURN_IF_ERROR(orch::CheckGpuNeeds(spec, plan, gpus).WithContext(f.spec_path));
  // Every resolved config is judged as `sweep run` would judge it; without a built-in runner
  // the plan is still printed, with a note. Notes go to stderr after the plan, stdout flushed
  // first, so in a terminal or a `2>&1` capture each starts a line of its own below the plan
  // (once "pool 0 GPU(s)note: ...").
  std::vector<std::string> notes;
  // The stall rule's default (spec.h Spec::stall_note) last, after the validation notes.
  auto print_notes = [&notes, &spec] {
    std::fflush(stdout);
    for (const std::string& n : notes) fmt::print(stderr, "note: {}\n", n);
    if (!spec.stall_note.empty()) fmt::print(stderr, "note: {}\n", spec.stall_note);
  };
  if (!f.no_validate) {
    orch::LaunchTools tools;
    const bool builtin = std::any_of(plan.runs.begin(), plan.runs.end(),
                                     [](const orch::PlannedRun& r) { return r.program.builtin; });
    if (builtin || !f.runner.empty()) {
      StatusOr<std::string> runner = orch::LocateRunner(f.runner);
      if (runner.ok()) {
        tools.runner = *runner;
      } else if (!f.runner.empty()) {
        return runner.status();
      } else {
        notes.push_back(fmt::format("the built-in runner's configs were not validated: {}",
                                    runner.status().message()));
      }
    }
    // A plan runs nothing: a user program is started to judge its configs only when asked.
    const bool user_validates =
        std::any_of(plan.runs.begin(), plan.runs.end(), [](const orch::PlannedRun& r) {
          return !r.program.builtin && r.program.validate;
        });
    if (user_validates && !f.validate) {
      notes.push_back(
          "the user program's configs were not validated (`sweep plan` starts no program; "
          "--validate asks it, as `sweep run` does)");
    }
    if (Status s = orch::ValidateResolvedConfigs(plan.runs, tools, spec.launch.env, f.validate)
                       .WithContext(f.spec_path);
        !s.ok()) {
      print_notes();
      return s;
    }
  }
  std::vector<orch::QueuedJob> jobs;
  double slot_seconds = 0, gpu_seconds = 0;
  int gpu_runs = 0, max_gpus = 0;
  for (const auto& r : plan.runs) {
    jobs.push_back({r.ordinal, r.slots, r.expected_seconds, 0, 0, r.gpus});
    slot_seconds += std::min(r.slots, f.slots) * r.expected_seconds;
    gpu_seconds += r.gpus * r.expected_seconds;
    gpu_runs += r.gpus > 0 ? 1 : 0;
    max_gpus = std::max(max_gpus, r.gpus);
  }
  const double lower = orch::MakespanLowerBound(jobs, f.slots, gpus);
  const double lpt = orch::SimulateMakespan(jobs, f.slots, gpus);
  if (f.json || f.format == "json") {
    nlohmann::json out = {{"sweep", spec.name},
                          {"spec_hash", spec.spec_hash},
                          {"points", plan.points},
                          {"duplicates", plan.duplicates},
                          {"slots", f.slots},
                          {"gpus", gpus},
                          {"gpu_runs", gpu_runs},
                          {"gpu_seconds", gpu_seconds},
                          {"lower_bound_seconds", lower},
                          {"planned_makespan_seconds", lpt}};
    out["dropped"] = nlohmann::json::object();
    for (const auto& [label, n] : plan.dropped) out["dropped"][label] = n;
    out["runs"] = nlohmann::json::array();
    for (const auto& r : plan.runs) {
      out["runs"].push_back({{"ordinal", r.ordinal},
                             {"id", r.id},
                             {"params", r.params},
                             {"world_size", r.world_size},
                             {"slots", r.slots},
                             {"gpus", r.gpus},
                             {"gpus_per_rank", r.gpus_per_rank},
                             {"cuda", orch::GpuMappingText(r)},
                             {"expected_seconds", r.expected_seconds},
                             {"scaled_lr", r.scaled_lr},
                             {"config", r.config}});
    }
    fmt::print("{}\n", out.dump(2));
    print_notes();
    return OkStatus();
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : plan.runs) {
    rows.push_back({std::to_string(r.ordinal), r.id, std::to_string(r.world_size),
                    std::to_string(r.slots), std::to_string(r.gpus),
                    std::to_string(r.config["local_batch_size"].get<long long>()),
                    std::to_string(r.config["micro_batch_size"].get<long long>()),
                    results::FormatNumber(r.scaled_lr), results::FormatNumber(r.expected_seconds),
                    orch::GpuMappingText(r), orch::ParamsText(r.params, " ")});
  }
  const std::vector<std::string> columns = {"ordinal",     "run_id",      "world_size",  "slots",
                                            "gpus",        "local_batch", "micro_batch", "lr",
                                            "est_seconds", "cuda",        "params"};
  if (f.format == "csv") {
    fmt::print("{}", results::FormatRows(columns, rows, results::OutputFormat::kCsv));
    print_notes();
    return OkStatus();
  }
  const long long runs = static_cast<long long>(plan.runs.size());
  fmt::print("sweep {} (spec hash {}): {}\n", spec.name, spec.spec_hash, Count(runs, "run"));
  fmt::print("{}", results::FormatRows(columns, rows, results::OutputFormat::kTable));
  // How the grid became the runs: its points, less those dropped and merged.
  fmt::print("{}", Count(plan.points, "grid point"));
  for (const auto& [label, n] : plan.dropped) fmt::print(", {} dropped by {}", n, label);
  if (plan.duplicates > 0) fmt::print(", {} merged", Count(plan.duplicates, "duplicate"));
  fmt::print(", {}", Count(runs, "run"));
  fmt::print(
      "\nestimated slot-seconds {}; on {} slot(s){}: lower bound {} s, longest-first "
      "plan {} s (estimates from the budget; see docs/spec.md)\n",
      results::FixedNumber(slot_seconds, 0), f.slots,
      gpu_runs > 0 ? fmt::format(" and {} GPU(s)", gpus) : "", results::FixedNumber(lower, 0),
      results::FixedNumber(lpt, 0));
  if (gpu_runs > 0) {
    fmt::print(
        "GPUs: {} of {} use GPUs (at most {} per run, {} GPU-seconds); pool {} GPU(s) "
        "(--gpus), CUDA_VISIBLE_DEVICES set per run, each rank's device its local rank\n",
        gpu_runs, Count(runs, "run"), max_gpus, results::FixedNumber(gpu_seconds, 0), gpus);
  } else {
    fmt::print("GPUs: none requested (resources.gpus_per_rank 0); pool {} GPU(s)\n", gpus);
  }
  print_notes();
  return OkStatus();
}

Status ListSweeps(const std::string& format, const CliContext& ctx) {
  BATCHLAB_ASSIGN_OR_RETURN(
      results::OutputFormat fmt_,
      results::ParseOutputFormat(format, "--format",
                                 {results::OutputFormat::kTable, results::OutputFormat::kCsv,
                                  results::OutputFormat::kJson, results::OutputFormat::kJsonl}));
  BATCHLAB_ASSIGN_OR_RETURN(auto db, results::OpenReadOnly(ctx.db_path));
  BATCHLAB_ASSIGN_OR_RETURN(results::Statement st, results::PrepareSweepList(*db));
  BATCHLAB_ASSIGN_OR_RETURN(int64_t rows, results::WriteRows(st, fmt_, stdout));
  if (fmt_ == results::OutputFormat::kTable) {
    fmt::print("({} sweep version{})\n", rows, rows == 1 ? "" : "s");
  }
  return OkStatus();
}

}  // namespace

void AddSweepCommands(CLI::App& app, CliContext& ctx) {
  auto* sweep = app.add_subcommand("sweep", "Validate, plan and run sweeps");
  AddVersionFlag(*sweep);
  sweep->require_subcommand(1);

  auto run_flags = std::make_shared<RunFlags>();
  auto* run = sweep->add_subcommand("run", "Run (or resume) a sweep spec");
  AddVersionFlag(*run);
  run->add_option("SPEC", run_flags->spec_path, "Sweep spec (JSON, see docs/spec.md)")->required();
  run->add_option("--slots", run_flags->slots, "Cores to fill (default: this machine's)")
      ->capture_default_str();
  run->add_option("--gpus", run_flags->gpus,
                  "GPUs in the pool (default: this machine's: CUDA_VISIBLE_DEVICES, else "
                  "/dev/nvidia*; under --backend slurm not counted unless given)");
  run->add_option("--runs-dir", run_flags->runs_dir, "Where attempt directories go")
      ->capture_default_str();
  run->add_option("--backend", run_flags->backend, "local (mpirun) or slurm (sbatch)")
      ->check(CLI::IsMember({"local", "slurm"}))
      ->capture_default_str();
  run->add_option("--runner", run_flags->runner,
                  "batchlab-runner to launch (default: $BATCHLAB_RUNNER, the build tree, PATH)");
  run->add_option("--max-runs", run_flags->max_runs, "Override the spec's max_runs limit");
  run->add_flag("--new-version", run_flags->new_version,
                "Record a changed spec as a new version of the sweep");
  run->add_flag("--no-validate", run_flags->no_validate,
                "Skip validating the resolved configs (batchlab-runner --validate-batch; user "
                "programs with validate: true)");
  run->add_option("--workers", run_flags->workers,
                  "reuse: keep the built-in runner's ranks alive across runs of the same shape "
                  "(warm workers; under --backend slurm, runs of one shape share an allocation "
                  "in sequence while their resources.timeout_seconds fits in "
                  "slurm.time_limit_minutes); fresh: a new mpirun or sbatch job for every run")
      ->check(CLI::IsMember({"reuse", "fresh"}))
      ->capture_default_str();
  run->add_flag("--force", run_flags->force,
                "Run even a target its metric can never meet (test_accuracy >= 80: a percent)");
  run->callback([run_flags, &ctx] { ctx.status = RunSweep(*run_flags, ctx); });

  auto plan_flags = std::make_shared<PlanFlags>();
  auto* plan = sweep->add_subcommand("plan", "Print the expanded runs and resources; run nothing");
  AddVersionFlag(*plan);
  plan->add_option("SPEC", plan_flags->spec_path, "Sweep spec (JSON)")->required();
  plan->add_option("--slots", plan_flags->slots, "Slots to plan for")->capture_default_str();
  plan->add_option("--gpus", plan_flags->gpus,
                   "GPUs to plan for (default: this machine's: CUDA_VISIBLE_DEVICES, else "
                   "/dev/nvidia*)");
  plan->add_option("--max-runs", plan_flags->max_runs, "Override the spec's max_runs limit");
  AddFormatOption(*plan, plan_flags->format, {"table", "csv", "json"},
                  "table, csv (the runs) or json (with resolved configs)");
  plan->add_flag("--json", plan_flags->json, "Same as --format json")->group("");  // old spelling
  plan->add_option("--runner", plan_flags->runner,
                   "batchlab-runner that validates the resolved configs (default: as for run)");
  auto* no_validate = plan->add_flag(
      "--no-validate", plan_flags->no_validate,
      "Skip validating the resolved configs with batchlab-runner --validate-batch");
  plan->add_flag("--validate", plan_flags->validate,
                 "Also start a user program with \"validate\": true once per distinct config to "
                 "judge it (as `sweep run` does; without it the plan starts no program)")
      ->excludes(no_validate);
  plan->add_flag("--force", plan_flags->force,
                 "Plan even a target its metric can never meet (test_accuracy >= 80: a percent)");
  plan->callback([plan_flags, &ctx] { ctx.status = PlanSweep(*plan_flags); });

  auto list_format = std::make_shared<std::string>("table");
  auto* list = sweep->add_subcommand("list", "Every sweep and version with its runs by outcome");
  AddVersionFlag(*list);
  AddFormatOption(*list, *list_format, {"table", "csv", "json", "jsonl"},
                  "table, csv, json or jsonl");
  list->callback([list_format, &ctx] { ctx.status = ListSweeps(*list_format, ctx); });

  auto status_flags = std::make_shared<StatusFlags>();
  auto* status = sweep->add_subcommand(
      "status", "Progress of a sweep: per-run step, loss, last eval, ETA (read-only)");
  AddVersionFlag(*status);
  status->add_option("NAME", status_flags->sweep, "Sweep name")->required();
  status
      ->add_option("--watch", status_flags->watch_seconds,
                   "Redraw every SECONDS until no run is left to run (default 2)")
      ->expected(0, 1)
      ->default_str("2");
  status->add_flag("--all", status_flags->all, "List every run, not only the running ones");
  AddFormatOption(*status, status_flags->format, {"table", "json"},
                  "table, or json (every run; one object per refresh with --watch)");
  status->callback([status_flags, &ctx] { ctx.status = ShowSweepStatus(*status_flags, ctx); });
}

}  // namespace batchlab::cli
