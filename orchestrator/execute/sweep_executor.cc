#include "orchestrator/execute/sweep_executor.h"

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <boost/filesystem.hpp>

#include "base/atomic_file.h"
#include "base/run_protocol.h"
#include "orchestrator/execute/attempt_policies.h"
#include "orchestrator/execute/attempt_verdict.h"
#include "orchestrator/plan/branch_pruning.h"
#include "orchestrator/plan/gpu_slots.h"
#include "orchestrator/spec/lr_search.h"
#include "orchestrator/plan/pruning.h"
#include "orchestrator/execute/run_table.h"
#include "orchestrator/plan/scheduler.h"
#include "orchestrator/spec/spec_extension.h"

namespace batchlab::orchestrator {
namespace {

namespace fs = boost::filesystem;
using results::RunState;

std::string Tail(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  auto size = static_cast<size_t>(in.tellg());
  size_t start = size > max_bytes ? size - max_bytes : 0;
  in.seekg(static_cast<std::streamoff>(start));
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// The finished state an `end` line's outcome names, if it names one.
std::optional<RunState> FinishedState(const std::string& outcome) {
  if (outcome.empty()) return std::nullopt;
  auto state = results::ParseRunState(outcome);
  if (!state.ok() || !results::IsFinished(*state)) return std::nullopt;
  return *state;
}

double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

StatusOr<results::SweepRecord> OpenSweep(results::Store& store, const Spec& spec, bool new_version,
                                         bool* created, std::string* extended) {
  BATCHLAB_ASSIGN_OR_RETURN(auto latest, store.LatestSweep(spec.name));
  *created = false;
  if (latest && latest->spec_hash == spec.spec_hash) return *latest;
  if (latest && !new_version) {
    // More seeds or axis values extend the same study (spec_extension.h); anything else is a
    // new version.
    const SpecChange change =
        CompareSpecs(nlohmann::json::parse(latest->spec_json, nullptr, false), spec.canonical);
    if (change.kind != SpecChange::kChanged) {
      BATCHLAB_RETURN_IF_ERROR(
          store.UpdateSweepSpec(latest->id, spec.canonical.dump(), spec.spec_hash));
      *extended = change.detail;
      latest->spec_hash = spec.spec_hash;
      return *latest;
    }
    return FailedPreconditionError(fmt::format(
        "sweep \"{}\" version {} was run with a different spec ({}); adding seeds or axis values "
        "extends a study, any other change needs a new version: pass --new-version to record "
        "this spec as version {}, or give the sweep another name",
        spec.name, latest->version, change.detail, latest->version + 1));
  }
  *created = true;
  return store.CreateSweep(spec.name, spec.canonical.dump(), spec.spec_hash);
}

// The target of a resolved config as the results store reads it (nullopt: none).
struct RunTarget {
  std::string metric, op;
  double value = 0;
};
std::optional<RunTarget> TargetOf(const nlohmann::json& config) {
  const auto t = config.find("target");
  if (t == config.end() || !t->is_object()) return std::nullopt;
  return RunTarget{t->value("metric", std::string("test_accuracy")),
                   t->value("op", std::string(">=")), t->value("value", 0.0)};
}

class Execution {
 public:
  Execution(const Spec& spec, const Plan& plan, results::Store& store, Launcher& launcher,
            const ExecutorOptions& options)
      : spec_(spec),
        plan_(plan),
        store_(store),
        launcher_(launcher),
        options_(options),
        runs_dir_(fs::absolute(options.runs_dir).lexically_normal().string()),
        queue_(options.slots),
        gpu_pool_(std::max(0, options.gpus)) {
    for (size_t i = 0; i < plan_.runs.size(); ++i) Track(i);
    now_ = options.clock.now ? options.clock.now : SteadySeconds;
    sleep_ = options.clock.sleep ? options.clock.sleep : [](double seconds) {
      std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    };
  }

  StatusOr<SweepOutcome> Run() {
    // A run needing more GPUs than the pool has could never start: refused before anything.
    if (options_.gpus >= 0) BATCHLAB_RETURN_IF_ERROR(CheckGpuNeeds(spec_, plan_, options_.gpus));
    BATCHLAB_ASSIGN_OR_RETURN(auto sweep, OpenSweep(store_, spec_, options_.new_version,
                                                    &out_.new_sweep, &out_.extended));
    out_.sweep_id = sweep.id;
    out_.version = sweep.version;
    out_.total = static_cast<int>(plan_.runs.size());
    BATCHLAB_RETURN_IF_ERROR(Prepare());
    BATCHLAB_RETURN_IF_ERROR(Loop());
    if (options_.progress != nullptr) options_.progress->Finish();
    return out_;
  }

 private:
  Status Prepare() {
    std::vector<size_t> all(plan_.runs.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    BATCHLAB_RETURN_IF_ERROR(AddRuns(all));
    if (out_.skipped > 0)
      Event(fmt::format("{} of {} runs already finished; skipped", out_.skipped, out_.total));
    // The LR search's later rounds, re-derived from the results in the database.
    for (size_t i = 0, n = plan_.runs.size(); i < n; ++i) {
      BATCHLAB_RETURN_IF_ERROR(AdvanceSearch(i));
    }
    return OkStatus();
  }

  // Records runs `added` of the plan in the database (a run it already holds is kept as it is)
  // and takes each up where the database left it (TakeUp): the whole plan at the start, each new
  // round of the LR search later (on resume, rounds the database already holds).
  Status AddRuns(const std::vector<size_t>& added) {
    for (size_t i : added) {
      BATCHLAB_RETURN_IF_ERROR(store_.AddRun(PlannedRecord(plan_.runs[i], out_.sweep_id)));
    }
    BATCHLAB_ASSIGN_OR_RETURN(auto existing, store_.RunsOfSweep(out_.sweep_id));
    std::map<std::string, const results::RunRecord*> by_id;
    for (const auto& rec : existing) by_id[rec.id] = &rec;
    for (size_t i : added) {
      auto it = by_id.find(plan_.runs[i].id);
      BATCHLAB_RETURN_IF_ERROR(TakeUp(i, it == by_id.end() ? nullptr : it->second));
    }
    return OkStatus();
  }

  // The resume logic, in one place: run i (kPlanned) as the database has it (`rec`; nullptr when
  // its config is a run of an earlier version of the sweep) becomes kDone (finished before, or
  // recovered from its end line), kHeld (a branch) or kQueued (never ran, or interrupted).
  Status TakeUp(size_t i, const results::RunRecord* rec) {
    const PlannedRun& r = plan_.runs[i];
    if (rec == nullptr) {
      // The same config is already a run of an earlier version of this sweep.
      BATCHLAB_RETURN_IF_ERROR(table_.Transition(i, RunStage::kDone));
      ++out_.skipped;
      Event(fmt::format("run {} ({}) belongs to an earlier version of the sweep; not re-run", r.id,
                        ParamsText(r.params, " ")));
      return OkStatus();
    }
    table_.SetAttempt(i, rec->attempt);
    if (results::IsFinished(rec->state)) {
      BATCHLAB_RETURN_IF_ERROR(table_.Transition(i, RunStage::kDone));
      BATCHLAB_RETURN_IF_ERROR(UpdatePrune(i, Phase::kFinished));
      ++out_.skipped;
      return OkStatus();
    }
    if (rec->state == RunState::kRunning) {
      // Left running by an orchestrator that died: stop what is left of it (found through the
      // folder recorded in the database, whatever --runs-dir is now), ingest the rest of its
      // metrics under its own attempt, and start over in a new attempt unless it had ended.
      BATCHLAB_ASSIGN_OR_RETURN(std::optional<std::string> recorded,
                                store_.AttemptDir(r.id, rec->attempt));
      const std::string dir =
          recorded ? *recorded : AttemptDir(runs_dir_, spec_.name, r.id, rec->attempt, "");
      launcher_.CleanUpStale(dir);
      BATCHLAB_ASSIGN_OR_RETURN(
          results::IngestStats tail,
          store_.IngestMetrics(r.id, rec->attempt, dir + "/" + protocol::kMetricsFile,
                               results::IngestPass::kFinal));
      if (std::optional<RunState> ended = FinishedState(tail.end_outcome)) {
        // The runner finished on its own terms before anyone recorded it: keep that result.
        BATCHLAB_RETURN_IF_ERROR(store_.Transition(
            r.id, *ended,
            {std::nullopt, "recovered from the end line after the orchestrator stopped"}));
        BATCHLAB_RETURN_IF_ERROR(table_.Transition(i, RunStage::kDone));
        BATCHLAB_RETURN_IF_ERROR(UpdatePrune(i, Phase::kFinished));
        ++out_.skipped;
        Event(fmt::format("run {} had finished ({}) while no orchestrator watched; kept", r.id,
                          results::RunStateName(*ended)));
        return OkStatus();
      }
      BATCHLAB_RETURN_IF_ERROR(store_.Transition(
          r.id, RunState::kCancelled,
          {std::nullopt, "interrupted: the orchestrator stopped while this attempt ran"}));
      ++out_.interrupted;
      Event(fmt::format("run {} was interrupted in attempt {}; it runs again", r.id, rec->attempt));
    }
    if (!r.trunk_id.empty()) {
      // A branch: queued once its trunk's checkpoint exists (ReleaseBranches).
      return table_.Transition(i, RunStage::kHeld);
    }
    return Enqueue(i, 0);
  }

  // Run i joins the queue, to start no earlier than `not_before` (0: at once).
  Status Enqueue(size_t i, double not_before) {
    const PlannedRun& r = plan_.runs[i];
    BATCHLAB_RETURN_IF_ERROR(table_.Transition(i, RunStage::kQueued));
    queue_.Add({static_cast<int>(i), r.slots, r.expected_seconds, not_before, Priority(i), r.gpus});
    return OkStatus();
  }

  Status Loop() {
    bool stopping = false;
    double stop_deadline = 0;
    BATCHLAB_RETURN_IF_ERROR(UpdateBranchPrune());  // branches finished in an earlier call
    std::vector<InFlight>& in_flight = table_.in_flight();
    while (!queue_.empty() || !in_flight.empty() || (table_.any_held() && !stopping)) {
      double now = now_();
      if (!stopping && table_.any_held()) BATCHLAB_RETURN_IF_ERROR(ReleaseBranches(now));
      if (!stopping && options_.stop_requested && options_.stop_requested()) {
        stopping = true;
        out_.stopped = true;
        stop_deadline = now + options_.terminate_grace_seconds;
        Event(fmt::format("stop requested: terminating {} running run(s)", in_flight.size()));
        for (auto& a : in_flight) a.job->Terminate();
      }
      if (stopping && now > stop_deadline) {
        for (auto& a : in_flight) a.job->Kill();
      }
      if (stopping && in_flight.empty()) break;
      if (!stopping) {
        int used = 0;
        for (const auto& a : in_flight) used += a.slots;
        // With pruning, a run whose group has a run in flight but no bar yet waits while other
        // runs can use the slot (it may then start with a bar, and stop at it).
        std::vector<size_t> taking;
        auto defer = [&](int key) {
          const auto i = static_cast<size_t>(key);
          if (!spec_.prune) return false;
          if (prune_.WouldStartBlind(i)) return true;
          for (size_t t : taking) {
            if (prune_.SameGroup(i, t) && !prune_.HasBar(i)) return true;
          }
          taking.push_back(i);
          return false;
        };
        // GPUs are a second resource: a run starts only when its slots and its GPUs are free.
        const int free_gpus =
            options_.gpus < 0 ? std::numeric_limits<int>::max() : gpu_pool_.free();
        for (int key : queue_.TakeStartable(options_.slots - used, free_gpus, now, defer)) {
          // A run that can no longer change the answer is never started.
          if (std::optional<std::string> why = WhyPrune(static_cast<size_t>(key))) {
            BATCHLAB_RETURN_IF_ERROR(PruneWaiting(static_cast<size_t>(key), *why));
          } else {
            BATCHLAB_RETURN_IF_ERROR(Launch(static_cast<size_t>(key)));
          }
          BATCHLAB_RETURN_IF_ERROR(AdvanceSearch(static_cast<size_t>(key)));
        }
      }
      for (size_t k = 0; k < in_flight.size();) {
        InFlight& a = in_flight[k];
        JobStatus st = a.job->Poll();
        if (!st.done) {
          const double every =
              prune_.HasBar(a.index)
                  ? std::min(options_.ingest_every_seconds, options_.prune_ingest_every_seconds)
                  : options_.ingest_every_seconds;
          if (now - a.last_ingest >= every) {
            BATCHLAB_RETURN_IF_ERROR(Ingest(a, results::IngestPass::kLive));
            a.last_ingest = now;
            if (a.saw_end && a.live.end_seen == 0) a.live.end_seen = now;
            BATCHLAB_RETURN_IF_ERROR(UpdatePrune(a.index, Phase::kRunning));
            BATCHLAB_RETURN_IF_ERROR(PruneRunning(now));
            BATCHLAB_RETURN_IF_ERROR(StallIfHopeless(a, now));
          }
          // Past its deadline, deaf to its stop file, or hanging after its end line: SIGTERM,
          // then SIGKILL after the grace period. (Facts stamped `now` by the ingest above never
          // act before the next look, so deciding after it is the same as before it.)
          Escalate(a, now);
          ++k;
          continue;
        }
        const size_t index = a.index;
        gpu_pool_.Release(a.gpu_ids);  // before Finish: a retry may take them again
        BATCHLAB_RETURN_IF_ERROR(Finish(table_.EndAttempt(k), st, stopping));
        if (!stopping) {
          if (!plan_.runs[index].trunk_id.empty()) BATCHLAB_RETURN_IF_ERROR(UpdateBranchPrune());
          BATCHLAB_RETURN_IF_ERROR(PruneRunning(now));
          BATCHLAB_RETURN_IF_ERROR(AdvanceSearch(index));
        }
      }
      ReportProgress(now);
      sleep_(options_.poll_seconds);
    }
    ReportProgress(now_());
    if (first_start_ > 0) out_.wall_seconds = last_end_ - first_start_;
    out_.lower_bound_seconds =
        std::max(longest_, out_.busy_slot_seconds / std::max(1, options_.slots));
    if (options_.gpus > 0) {
      out_.lower_bound_seconds =
          std::max(out_.lower_bound_seconds, out_.busy_gpu_seconds / options_.gpus);
    }
    return OkStatus();
  }

  // Sends what DecideLive (attempt_policies.h) says attempt `a` needs at `now`, and notes it.
  void Escalate(InFlight& a, double now) {
    const LiveDecision d = DecideLive(a.live, now);
    if (d.action == LiveAction::kKill) a.job->Kill();
    if (d.action != LiveAction::kTerminate) return;
    a.live.terminate_sent = now;
    if (d.reason == TerminateReason::kDeadline) {
      a.live.timed_out = true;
    } else {
      a.live.stop_after_end = true;  // it had its chance to stop by itself
    }
    a.job->Terminate();
  }

  Status Launch(size_t i) {
    const PlannedRun& r = plan_.runs[i];
    const int attempt = table_[i].attempt + 1;
    BATCHLAB_ASSIGN_OR_RETURN(
        const std::string dir,
        NewFolder(AttemptDir(runs_dir_, spec_.name, r.id, attempt, store_.database_id())));
    nlohmann::json config = r.config;
    config["attempt"] = attempt;
    config["metrics_path"] = dir + "/" + protocol::kMetricsFile;
    {
      std::ofstream out(dir + "/" + protocol::kConfigFile);
      out << config.dump(2) << "\n";
      out.close();  // a full disk shows here, not before
      if (!out) {
        return UnavailableError(fmt::format("cannot write {}/config.json: {} (is the disk full?)",
                                            dir, std::strerror(errno)));
      }
    }
    BATCHLAB_RETURN_IF_ERROR(WriteResumeFile(r.id, attempt, dir));
    if (!r.trunk_id.empty()) BATCHLAB_RETURN_IF_ERROR(WriteBranchFromFile(r, dir));
    BATCHLAB_RETURN_IF_ERROR(store_.StartAttempt(r.id, dir));
    table_.SetAttempt(i, attempt);
    ++out_.attempts;
    LaunchRequest req;
    req.run_id = r.id;
    req.attempt = attempt;
    req.attempt_dir = dir;
    req.config_path = req.attempt_dir + "/" + protocol::kConfigFile;
    req.nodes = config["nodes"].get<int>();
    req.ranks_per_node = config["ranks_per_node"].get<int>();
    req.world_size = r.world_size;
    req.slots = std::min(r.slots, options_.slots);
    req.cpus_per_rank = std::max(1, r.slots / std::max(1, r.world_size));
    req.timeout_seconds = spec_.resources.timeout_seconds;
    req.gpus_per_rank = r.gpus_per_rank;
    if (options_.gpus >= 0 && r.gpus > 0) {
      // The scheduler took the run because its GPUs are free: these are its own until it ends.
      std::optional<std::vector<int>> ids = gpu_pool_.Allocate(r.gpus);
      if (!ids) {
        return InternalError(fmt::format("run {} was started with {} GPU(s) needed but {} free",
                                         r.id, r.gpus, gpu_pool_.free()));
      }
      req.gpu_ids = *ids;
    }
    const double now = now_();
    if (first_start_ == 0) first_start_ = now;
    Status described = DescribeRanks(r, &req);
    StatusOr<std::unique_ptr<Job>> job =
        described.ok() ? launcher_.Start(req) : StatusOr<std::unique_ptr<Job>>(described);
    if (!job.ok()) {
      gpu_pool_.Release(req.gpu_ids);
      BATCHLAB_RETURN_IF_ERROR(
          store_.Transition(r.id, RunState::kFailed, {std::nullopt, job.status().message()}));
      last_end_ = now;
      return AfterFailure(i, RunState::kFailed, job.status().message(), true);
    }
    InFlight a;
    a.index = i;
    a.attempt = attempt;
    a.job = std::move(job).value();
    a.dir = req.attempt_dir;
    a.started = now;
    a.last_ingest = now;
    a.slots = req.slots;
    a.gpu_ids = req.gpu_ids;
    a.port = req.env.count("MASTER_PORT") ? std::stoi(req.env.at("MASTER_PORT")) : 0;
    if (spec_.resources.timeout_seconds > 0) {
      a.live.deadline = now + spec_.resources.timeout_seconds;
    }
    a.live.grace_seconds = options_.terminate_grace_seconds;
    prune_.SetRunning(i, -1);
    ShareStopStep(a);
    Event(fmt::format(
        "run {} ({}) started, attempt {}{}", r.id, ParamsText(r.params, " "), attempt,
        a.gpu_ids.empty() ? std::string() : fmt::format(", GPUs {}", fmt::join(a.gpu_ids, ","))));
    return table_.Start(std::move(a));
  }

  // resume.json (docs/protocol.md, "Checkpoints"): the run's earlier attempts' folders, newest
  // first, whose newest valid checkpoint the new attempt resumes from. None for a first attempt.
  Status WriteResumeFile(const std::string& run_id, int attempt, const std::string& dir) {
    nlohmann::json earlier = nlohmann::json::array();
    for (int k = attempt - 1; k >= 1; --k) {
      BATCHLAB_ASSIGN_OR_RETURN(std::optional<std::string> at, store_.AttemptDir(run_id, k));
      if (at) earlier.push_back({{"attempt", k}, {"dir", *at}});
    }
    if (earlier.empty()) return OkStatus();
    const std::string path = dir + "/" + protocol::kResumeFile;
    const Status written =
        WriteFileAtomically(path, nlohmann::json{{"attempts", earlier}}.dump(2) + "\n");
    if (!written.ok()) return UnavailableError(written.message());
    return OkStatus();
  }

  // The trunk's attempt folders, newest first (a branch's checkpoint may be in any of them).
  StatusOr<std::vector<std::string>> TrunkDirs(const std::string& trunk_id) {
    std::vector<std::string> dirs;
    const std::optional<size_t> trunk = table_.IndexOf(trunk_id);
    const int attempts = trunk ? table_[*trunk].attempt : 0;
    for (int k = attempts; k >= 1; --k) {
      BATCHLAB_ASSIGN_OR_RETURN(std::optional<std::string> at, store_.AttemptDir(trunk_id, k));
      if (at) dirs.push_back(*at);
    }
    return dirs;
  }

  // branch_from.json (docs/protocol.md): the trunk's attempt folders, for the branch's runner.
  Status WriteBranchFromFile(const PlannedRun& r, const std::string& dir) {
    BATCHLAB_ASSIGN_OR_RETURN(std::vector<std::string> dirs, TrunkDirs(r.trunk_id));
    const std::string path = dir + "/" + protocol::kBranchFromFile;
    const Status written =
        WriteFileAtomically(path, nlohmann::json{{"trunk_dirs", dirs}}.dump(2) + "\n");
    if (!written.ok()) return UnavailableError(written.message());
    return OkStatus();
  }

  // Held branches whose trunk checkpoint now exists (every rank's shard) join the queue, while
  // the trunk goes on; those whose trunk ended without it fail, saying why. Checked at most every
  // 0.2 s (and at once when nothing else runs).
  Status ReleaseBranches(double now) {
    if (now - last_branch_check_ < 0.2 && !(queue_.empty() && table_.in_flight().empty())) {
      return OkStatus();
    }
    last_branch_check_ = now;
    for (size_t i : table_.Held()) {
      const PlannedRun& r = plan_.runs[i];
      if (table_[i].branch_prune) {
        BATCHLAB_RETURN_IF_ERROR(PruneWaiting(i, *table_[i].branch_prune));
        continue;
      }
      BATCHLAB_ASSIGN_OR_RETURN(std::vector<std::string> dirs, TrunkDirs(r.trunk_id));
      bool ready = false;
      for (const std::string& d : dirs) {
        bool all = true;
        for (int rank = 0; rank < r.world_size && all; ++rank) {
          all = fs::exists(fs::path(d) / protocol::kCheckpointDir /
                           protocol::CheckpointShardName(r.branch_step, rank));
        }
        ready = ready || all;
      }
      if (ready) {
        BATCHLAB_RETURN_IF_ERROR(Enqueue(i, 0));
        Event(fmt::format("run {} ({}) queued: trunk {} has its checkpoint at step {}", r.id,
                          ParamsText(r.params, " "), r.trunk_id, r.branch_step));
        continue;
      }
      const std::optional<size_t> trunk = table_.IndexOf(r.trunk_id);
      if (trunk && table_[*trunk].done()) {
        const std::string why = fmt::format(
            "trunk run {} ended without a checkpoint at step {} (it stopped before the branch "
            "point, e.g. at its target, or failed); see its log",
            r.trunk_id, r.branch_step);
        BATCHLAB_RETURN_IF_ERROR(store_.RecordEvent(r.id, "branch", why));
        BATCHLAB_RETURN_IF_ERROR(
            store_.Transition(r.id, RunState::kFailed, {std::nullopt, why}));
        BATCHLAB_RETURN_IF_ERROR(table_.Transition(i, RunStage::kDone));
        ++out_.failed;
        Event(fmt::format("run {} ({}) failed: {}", r.id, ParamsText(r.params, " "), why));
      }
    }
    return OkStatus();
  }

  // What every rank runs (program.h): the built-in runner, or the user's program through
  // batchlab-rank with the torch.distributed environment and a port of its own.
  Status DescribeRanks(const PlannedRun& r, LaunchRequest* req) {
    const Program& program = r.program;
    req->launch = program.launch;
    req->rank_command = RankCommand(program, options_.tools, req->config_path);
    if (program.builtin) return OkStatus();
    if (options_.tools.rank_exec.empty()) {
      return FailedPreconditionError("batchlab-rank is needed to launch a user program");
    }
    req->workdir = program.workdir;
    if (program.launch == LaunchMode::kTorchrun) {
      req->spawn_command = SpawnCommand(program, options_.tools, r.world_size, req->config_path);
    }
    std::vector<int> taken;
    for (const auto& a : table_.in_flight()) taken.push_back(a.port);
    BATCHLAB_ASSIGN_OR_RETURN(int port, FreeTcpPort(taken));
    req->env = ProgramEnvironment(req->config_path, "127.0.0.1", port);
    return OkStatus();
  }

  // A folder that did not exist before: `base`, or `base-2`, `base-3`, ... Never an existing one.
  StatusOr<std::string> NewFolder(const std::string& base) {
    boost::system::error_code ec;
    fs::create_directories(fs::path(base).parent_path(), ec);
    if (ec) return InternalError(fmt::format("cannot create {}: {}", base, ec.message()));
    for (int k = 1; k <= 1000; ++k) {
      std::string dir = k == 1 ? base : fmt::format("{}-{}", base, k);
      if (fs::create_directory(dir, ec)) return dir;  // false: it exists (left as it is)
      if (ec) return InternalError(fmt::format("cannot create {}: {}", dir, ec.message()));
    }
    return InternalError(fmt::format("cannot find a new folder name for {}", base));
  }

  Status Ingest(InFlight& a, results::IngestPass pass) {
    BATCHLAB_ASSIGN_OR_RETURN(auto stats, store_.IngestMetrics(plan_.runs[a.index].id, a.attempt,
                                                               a.dir + "/" + protocol::kMetricsFile, pass));
    a.saw_end = a.saw_end || stats.saw_end;
    if (!stats.end_outcome.empty()) a.end_outcome = stats.end_outcome;
    return OkStatus();
  }

  // Attempt `a`, taken out of the table's in-flight list, ended with `st`: its verdict
  // (attempt_verdict.h) recorded, its run moved on (done, queued again, cancelled).
  Status Finish(InFlight a, const JobStatus& st, bool stopping) {
    const PlannedRun& r = plan_.runs[a.index];
    const double now = now_();
    last_end_ = now;
    BATCHLAB_RETURN_IF_ERROR(Ingest(a, results::IngestPass::kFinal));
    const double seconds = now - a.started;
    longest_ = std::max(longest_, seconds);
    out_.busy_slot_seconds += seconds * a.slots;
    out_.busy_gpu_seconds += seconds * static_cast<double>(a.gpu_ids.size());
    run_seconds_sum_ += seconds;
    ++runs_timed_;

    AttemptReport report;
    report.exit_code = st.exit_code;
    report.signal = st.signal;
    report.saw_end = a.saw_end;
    report.end_outcome = a.end_outcome;
    report.timed_out = a.live.timed_out;
    report.stop_after_end = a.live.stop_after_end;
    report.stopping = stopping;
    report.prune_sent = a.live.prune_sent > 0;
    report.prune_reason = a.prune_reason;
    report.stalled = a.stalled;
    report.unrunnable = st.unrunnable;
    report.detail = st.detail;
    report.stderr_tail = Tail(a.dir + "/" + protocol::kStderrFile, 1500);
    report.seconds = seconds;
    report.timeout_seconds = spec_.resources.timeout_seconds;
    AttemptVerdict verdict = DecideAttempt(report);
    const RunState state = verdict.state;
    const std::optional<int> code = verdict.code;
    std::string& message = verdict.message;
    if (verdict.pruned_at_bound) {
      // It stopped itself at the bound in its prune_at file; the book says why, from the steps
      // it logged.
      BATCHLAB_RETURN_IF_ERROR(UpdatePrune(a.index, Phase::kRunning));
      message = "pruned at its prune_at bound (step " + std::to_string(a.stop_from_step) +
                "): " + prune_.WhyPrune(a.index).value_or("its bound passed the bar");
      BATCHLAB_RETURN_IF_ERROR(store_.RecordEvent(r.id, "prune", message));
    }
    if (verdict.preempted) {
      // A Slurm limit, a preemption or a SIGTERM: it checkpointed and left. Not a failure: it
      // goes on in a new attempt at once (from that checkpoint), without using a retry.
      BATCHLAB_RETURN_IF_ERROR(store_.RecordEvent(r.id, "preempted", message));
      BATCHLAB_RETURN_IF_ERROR(store_.Transition(r.id, RunState::kPending, {code, message}));
      BATCHLAB_RETURN_IF_ERROR(UpdatePrune(a.index, Phase::kWaiting));
      ++out_.preempted;
      BATCHLAB_RETURN_IF_ERROR(Enqueue(a.index, now));
      Event(fmt::format("run {} preempted after {:.1f} s; it resumes in a new attempt", r.id,
                        seconds));
      return OkStatus();
    }
    const bool retryable = verdict.retryable;
    BATCHLAB_RETURN_IF_ERROR(store_.Transition(r.id, state, {code, message}));
    if (results::IsFinished(state)) {
      BATCHLAB_RETURN_IF_ERROR(table_.Transition(a.index, RunStage::kDone));
      BATCHLAB_RETURN_IF_ERROR(UpdatePrune(a.index, Phase::kFinished));
    } else {
      BATCHLAB_RETURN_IF_ERROR(UpdatePrune(a.index, Phase::kWaiting));
    }
    if (state == RunState::kStalled) {
      ++out_.stalled;
      Event(fmt::format("run {} stalled after {:.1f} s", r.id, seconds));
      return OkStatus();
    }
    if (state == RunState::kPruned) {
      ++out_.pruned;
      Event(fmt::format("run {} pruned after {:.1f} s", r.id, seconds));
      return OkStatus();
    }
    if (state == RunState::kCancelled) {
      BATCHLAB_RETURN_IF_ERROR(table_.Transition(a.index, RunStage::kCancelled));
      ++out_.cancelled;
      Event(fmt::format("run {} cancelled", r.id));
      return OkStatus();
    }
    if (state != RunState::kFailed && state != RunState::kTimedOut) {
      ++out_.succeeded;
      Event(fmt::format("run {} {} in {:.1f} s", r.id, results::RunStateName(state), seconds));
      return OkStatus();
    }
    return AfterFailure(a.index, state, message, retryable);
  }

  Status AfterFailure(size_t i, RunState state, const std::string& message, bool retryable) {
    const PlannedRun& r = plan_.runs[i];
    std::string first_line = message.substr(0, message.find('\n'));
    const RunSlot& slot = table_[i];
    if (MayRetry(retryable, slot.failures, spec_.resources.retries)) {
      table_.CountFailure(i);
      const double backoff = RetryDelay(slot.failures, spec_.resources.retry_backoff_seconds);
      BATCHLAB_RETURN_IF_ERROR(
          store_.RecordEvent(r.id, "retry",
                             fmt::format("attempt {} {}; retry {} of {} in {:.1f} s", slot.attempt,
                                         results::RunStateName(state), slot.failures,
                                         spec_.resources.retries, backoff)));
      BATCHLAB_RETURN_IF_ERROR(store_.Transition(r.id, RunState::kPending, {}));
      BATCHLAB_RETURN_IF_ERROR(Enqueue(i, now_() + backoff));
      Event(fmt::format("run {} {} ({}); retry {}/{} in {:.1f} s", r.id,
                        results::RunStateName(state), first_line, slot.failures,
                        spec_.resources.retries, backoff));
      return OkStatus();
    }
    ++out_.failed;
    BATCHLAB_RETURN_IF_ERROR(table_.Transition(i, RunStage::kDone));
    Event(fmt::format("run {} {}: {}", r.id, results::RunStateName(state), first_line));
    return OkStatus();
  }

  // Queue order: with pruning, every configuration's first seed before any second seed, so a
  // configuration that reaches the target early sets the bar for the others; with an LR search,
  // within a seed rank the largest LRs of every search point first (LrStartRank), so the bar is
  // usually set before a point's slow small LRs start.
  int Priority(size_t i) const {
    if (!spec_.prune) return 0;
    if (!plan_.runs[i].trunk_id.empty()) {
      // A branch: smaller multipliers first, so the gap that prunes the larger ones is known
      // before they start (UpdateBranchPrune).
      const double k = plan_.runs[i].config["branch"].value("multiplier", 0.0);
      return static_cast<int>(std::count_if(spec_.branch.multipliers.begin(),
                                            spec_.branch.multipliers.end(),
                                            [k](double m) { return m < k; }));
    }
    const auto it =
        std::find(spec_.seeds.begin(), spec_.seeds.end(), plan_.runs[i].config.value("seed", 0LL));
    const int seed_rank = static_cast<int>(it - spec_.seeds.begin());
    if (!spec_.lr_search.enabled) return seed_rank;
    const int lr_rank =
        LrStartRank(spec_.lr_search, std::stod(plan_.runs[i].params.at(spec_.lr_search.path)));
    return seed_rank * (spec_.lr_search.grid + 1) + lr_rank;
  }

  // Tells the pruning book what the database now knows of run i: finished runs either hit the
  // target or are out; running ones are bounded by the target metric's last logged step; the
  // others (failed, cancelled, timed out: they may run again from scratch) wait.
  enum class Phase { kFinished, kRunning, kWaiting };
  Status UpdatePrune(size_t i, Phase phase) {
    const std::optional<RunTarget> target = TargetOf(plan_.runs[i].config);
    if ((!spec_.prune && !spec_.lr_search.enabled) || !target) return OkStatus();
    BATCHLAB_ASSIGN_OR_RETURN(
        results::TargetProgress p,
        store_.TargetProgressOf(plan_.runs[i].id, target->metric, target->op, target->value));
    if (phase == Phase::kFinished) table_.SetHit(i, p.hit_step);
    if (p.hit_step && phase != Phase::kWaiting) {
      prune_.SetReached(i, *p.hit_step);
    } else if (phase == Phase::kFinished) {
      prune_.SetOut(i);
    } else if (phase == Phase::kRunning) {
      prune_.SetRunning(i, p.last_step.value_or(-1));
    } else {
      prune_.SetWaiting(i);
    }
    return OkStatus();
  }

  // Asks every running run that can no longer change the answer to stop: the file `stop` in its
  // attempt folder (docs/protocol.md), an event with the reason, SIGTERM after the grace period.
  // Why run i can no longer change the answer: the steps-to-target book (pruning.h), or its
  // branch point's analysis (UpdateBranchPrune); nullopt: it may.
  std::optional<std::string> WhyPrune(size_t i) const {
    if (table_[i].branch_prune) return table_[i].branch_prune;
    return prune_.WhyPrune(i);
  }

  // A branch study's exact pruning (branch_pruning.h): at each point, once some k's gap to the
  // smallest k passes the tolerance in every resample of the finished branches' last
  // evaluations, the branches with a larger k are marked (never started, or asked to stop). The
  // values are the analysis's: test_loss, the last branch.smooth_evals of every run that
  // finished on its own terms (completed, budget_exhausted, target_reached).
  Status UpdateBranchPrune() {
    // With an LR search per branch batch the analysis keeps each k's best factor, which the
    // bound below does not cover: no pruning then.
    if (!spec_.prune || !spec_.branch.enabled || spec_.branch.lr_factors.size() > 1) {
      return OkStatus();
    }
    BATCHLAB_ASSIGN_OR_RETURN(std::vector<results::RunRecord> records,
                              store_.RunsOfSweep(out_.sweep_id));
    std::map<std::string, RunState> state_of;
    for (const results::RunRecord& rec : records) state_of[rec.id] = rec.state;
    std::map<std::pair<std::string, long long>, std::map<double, std::vector<size_t>>> points;
    for (size_t i = 0; i < plan_.runs.size(); ++i) {
      const PlannedRun& r = plan_.runs[i];
      const auto branch = r.config.find("branch");
      if (r.trunk_id.empty() || branch == r.config.end() || !branch->is_object()) continue;
      points[{r.trunk_id, r.branch_step}][branch->value("multiplier", 0.0)].push_back(i);
    }
    for (const auto& [point, by_k] : points) {
      std::vector<KLosses> ks;
      for (const auto& [k, members] : by_k) {
        KLosses losses{k, {}, true};
        for (size_t i : members) {
          if (!table_[i].done()) {
            losses.complete = false;
            continue;
          }
          const auto st = state_of.find(plan_.runs[i].id);
          if (st == state_of.end() || (st->second != RunState::kCompleted &&
                                       st->second != RunState::kBudgetExhausted &&
                                       st->second != RunState::kTargetReached)) {
            continue;  // left out by the analysis too
          }
          BATCHLAB_ASSIGN_OR_RETURN(
              std::vector<double> last,
              store_.RecentValuesOf(plan_.runs[i].id, protocol::kMetricTestLoss,
                                    spec_.branch.smooth_evals));
          if (!last.empty()) losses.seeds.push_back(std::move(last));
        }
        if (losses.complete && losses.seeds.empty()) continue;  // absent from the analysis
        ks.push_back(std::move(losses));
      }
      const std::optional<double> above = PrunableAbove(ks, spec_.branch.tolerance);
      if (!above) continue;
      for (const auto& [k, members] : by_k) {
        if (k <= *above) continue;
        for (size_t i : members) {
          if (table_[i].done() || table_[i].branch_prune) continue;
          table_.SetBranchPrune(i, fmt::format(
              "at trunk step {} the loss gap of k = {} to the smallest k passed the tolerance {} "
              "in every resample of its seeds' last evaluations, so no larger k can change the "
              "critical batch size there",
              point.second, *above, spec_.branch.tolerance));
        }
      }
    }
    return OkStatus();
  }

  Status PruneRunning(double now) {
    for (InFlight& a : table_.in_flight()) {
      if (a.live.prune_sent > 0 || a.saw_end) continue;
      std::optional<std::string> why = WhyPrune(a.index);
      if (!why) continue;
      std::ofstream stop(a.dir + "/" + protocol::kStopFile);
      stop << nlohmann::json{{"reason", "pruned"}, {"message", *why}}.dump() << "\n";
      stop.close();
      a.live.prune_sent = now;
      a.prune_reason = *why;
      BATCHLAB_RETURN_IF_ERROR(store_.RecordEvent(plan_.runs[a.index].id, "prune", *why));
      Event(fmt::format("run {} asked to stop: {}", plan_.runs[a.index].id, *why));
    }
    for (InFlight& a : table_.in_flight()) ShareStopStep(a);
    return OkStatus();
  }

  // The opt-in stall rule (docs/spec.md "Stall rule"): a running run whose last `evals`
  // evaluations of its target metric were all at the chance level or worse is asked to stop
  // through the stop file, as a pruned run is (so every program that honours pruning honours
  // it), and is recorded as stalled: never counted as reaching or missing the target.
  Status StallIfHopeless(InFlight& a, double now) {
    if (!spec_.stall || a.live.prune_sent > 0 || a.saw_end) return OkStatus();
    const PlannedRun& r = plan_.runs[a.index];
    const std::optional<RunTarget> target = TargetOf(r.config);
    if (!target) return OkStatus();
    const Spec::StallRule& rule = *spec_.stall;
    BATCHLAB_ASSIGN_OR_RETURN(std::vector<double> last,
                              store_.RecentValuesOf(r.id, target->metric, rule.evals));
    if (static_cast<int>(last.size()) < rule.evals) return OkStatus();
    const bool higher_is_better = target->op == ">=" || target->op == ">";
    const bool hopeless = std::all_of(last.begin(), last.end(), [&](double v) {
      return !std::isfinite(v) || (higher_is_better ? v <= rule.chance : v >= rule.chance);
    });
    if (!hopeless) return OkStatus();
    const std::string why = fmt::format(
        "stalled: its last {} evaluations of {} were at the chance level ({}) or worse (the "
        "spec's stall rule)",
        rule.evals, target->metric, rule.chance);
    std::ofstream stop(a.dir + "/" + protocol::kStopFile);
    stop << nlohmann::json{{"reason", "stalled"}, {"message", why}}.dump() << "\n";
    stop.close();
    a.live.prune_sent = now;
    a.prune_reason = why;
    a.stalled = true;
    BATCHLAB_RETURN_IF_ERROR(store_.RecordEvent(r.id, "stall", why));
    Event(fmt::format("run {} asked to stop: {}", r.id, why));
    return OkStatus();
  }

  // Writes the bound at which run a may stop itself (pruning.h, StopFromStep) to the file
  // prune_at beside its config when it changed (docs/protocol.md). The built-in runner reads it
  // at each evaluation and so stops within a step of the bar, where the stop file needs the next
  // read of its metrics and then the runner's next look (a run at a small batch size takes
  // hundreds of steps in that time); other programs ignore it and get the stop file.
  void ShareStopStep(InFlight& a) {
    if (a.live.prune_sent > 0 || a.saw_end) return;
    const std::optional<int64_t> bound = prune_.StopFromStep(a.index);
    if (!bound || *bound == a.stop_from_step) return;
    if (WriteFileAtomically(a.dir + "/" + protocol::kPruneAtFile,
                            nlohmann::json{{"stop_from_step", *bound}}.dump() + "\n")
            .ok()) {
      a.stop_from_step = *bound;
    }
  }

  // A waiting run that can no longer change the answer: recorded as pruned, never started.
  Status PruneWaiting(size_t i, const std::string& why) {
    const PlannedRun& r = plan_.runs[i];
    BATCHLAB_RETURN_IF_ERROR(store_.RecordEvent(r.id, "prune", why));
    BATCHLAB_RETURN_IF_ERROR(store_.Transition(r.id, RunState::kPruned,
                                               {std::nullopt, "pruned before it started: " + why}));
    prune_.SetOut(i);
    BATCHLAB_RETURN_IF_ERROR(table_.Transition(i, RunStage::kDone));
    ++out_.pruned;
    Event(fmt::format("run {} ({}) pruned before it started", r.id, ParamsText(r.params, " ")));
    return OkStatus();
  }

  // Registers plan_.runs[i] with the pruning book and the LR search (constructor, new rounds).
  void Track(size_t i) {
    const PlannedRun& r = plan_.runs[i];
    // With an LR search, runs are compared only within their search point, so pruning never
    // changes which LR is best there (and so never the search's path).
    std::string group = PruneGroup(r, spec_.prune);
    if (!group.empty() && spec_.lr_search.enabled) group += " " + SearchGroup(r);
    const size_t book_index = prune_.Add(group, PruneConfig(r), r.id);
    const size_t table_index = table_.Add(
        r.id, spec_.lr_search.enabled ? std::optional<std::string>(SearchGroup(r)) : std::nullopt);
    // The table, the book and the plan align.
    assert(book_index == i && table_index == i);
    (void)book_index;
    (void)table_index;
  }

  // The LR search's unit: the run's swept values without the searched path and the seed.
  std::string SearchGroup(const PlannedRun& r) const {
    std::string key;
    for (const auto& [name, value] : r.params) {
      if (name != "seed" && name != spec_.lr_search.path) key += name + "=" + value + ",";
    }
    return key;
  }

  // Once every run of run i's search group is done, adds the search's next round (lr_search.h)
  // as ordinary runs: in the database, queued, pruned like any other. On resume the rounds the
  // database already holds are re-derived from their results, in the same order.
  Status AdvanceSearch(size_t i) {
    if (!spec_.lr_search.enabled) return OkStatus();
    const std::string group = table_[i].search_group;
    for (;;) {
      const std::vector<size_t>& members = table_.SearchGroupRuns(group);
      if (!std::all_of(members.begin(), members.end(), [&](size_t m) { return table_[m].done(); })) {
        return OkStatus();
      }
      // Per LR: the mean hit step over its seeds when every seed reached the target.
      std::map<std::string, std::vector<size_t>> by_lr;
      for (size_t m : members) by_lr[plan_.runs[m].params.at(spec_.lr_search.path)].push_back(m);
      std::vector<LrResult> tried;
      for (const auto& [text, runs] : by_lr) {
        LrResult r{std::stod(text), std::nullopt};
        double sum = 0;
        bool all = true;
        for (size_t m : runs) {
          all = all && table_[m].hit.has_value();
          if (table_[m].hit) sum += static_cast<double>(*table_[m].hit);
        }
        if (all) r.steps = sum / static_cast<double>(runs.size());
        tried.push_back(r);
      }
      const std::vector<double> next =
          NextLrs(spec_.lr_search, tried, table_.SearchRounds(group));
      if (next.empty()) return OkStatus();
      table_.AddSearchRound(group);
      // One new run per seed, from the runs of the best LR (same batch size and other values).
      const std::optional<double> best = BestLr(tried);
      std::vector<size_t> templates;
      for (const auto& [text, runs] : by_lr) {
        if (std::stod(text) == *best) templates = runs;
      }
      std::vector<size_t> added;
      for (double lr : next) {
        for (size_t t : templates) {
          PlannedRun run = WithSweptValue(plan_.runs[t], spec_.lr_search.path, nlohmann::json(lr),
                                          static_cast<int>(plan_.runs.size()));
          plan_.runs.push_back(std::move(run));
          Track(plan_.runs.size() - 1);
          added.push_back(plan_.runs.size() - 1);
        }
      }
      ++out_.search_rounds;
      out_.total += static_cast<int>(added.size());
      Event(fmt::format("LR search ({}): best {} = {} so far; adds {}", group, spec_.lr_search.path,
                        *best, fmt::join(next, ", ")));
      BATCHLAB_RETURN_IF_ERROR(AddRuns(added));
    }
  }

  void Event(const std::string& line) {
    if (options_.progress != nullptr) options_.progress->Event(line);
  }

  void ReportProgress(double now) {
    if (options_.progress == nullptr) return;
    ProgressCounts c;
    c.total = out_.total;
    c.done = out_.skipped + out_.succeeded + out_.failed + out_.cancelled + out_.pruned;
    c.running = static_cast<int>(table_.in_flight().size());
    c.failed = out_.failed;
    c.waiting = static_cast<int>(queue_.size());
    c.mean_run_seconds = runs_timed_ > 0 ? run_seconds_sum_ / runs_timed_ : 0;
    double mean_slots = 0;
    for (const auto& r : plan_.runs) mean_slots += std::min(r.slots, options_.slots);
    mean_slots = plan_.runs.empty() ? 1 : mean_slots / static_cast<double>(plan_.runs.size());
    c.parallelism = std::max(1.0, options_.slots / std::max(1.0, mean_slots));
    if (options_.gpus > 0) {
      // GPU runs are also limited by the GPUs: as many at once as the mean need fits.
      double mean_gpus = 0;
      for (const auto& r : plan_.runs) mean_gpus += r.gpus;
      mean_gpus = plan_.runs.empty() ? 0 : mean_gpus / static_cast<double>(plan_.runs.size());
      if (mean_gpus > 0) {
        c.parallelism = std::min(c.parallelism, std::max(1.0, options_.gpus / mean_gpus));
      }
    }
    options_.progress->Update(c, now);
  }

  const Spec& spec_;
  Plan plan_;  // grows as the LR search adds rounds
  results::Store& store_;
  Launcher& launcher_;
  const ExecutorOptions& options_;
  const std::string runs_dir_;  // absolute
  LptQueue queue_;
  GpuAllocator gpu_pool_;      // options_.gpus device ids (none when GPUs are not counted)
  RunTable table_;  // each run's stage, attempt in flight, held/pruned/search state, indexed
                    // like plan_.runs (run_table.h)
  PruneBook prune_;                          // indexed like plan_.runs
  double last_branch_check_ = -1e18;
  SweepOutcome out_;
  std::function<double()> now_;
  std::function<void(double)> sleep_;
  double first_start_ = 0, last_end_ = 0, longest_ = 0, run_seconds_sum_ = 0;
  int runs_timed_ = 0;
};

}  // namespace

std::string AttemptDir(const std::string& runs_dir, const std::string& sweep,
                       const std::string& run_id, int attempt, const std::string& database_id) {
  if (database_id.empty())
    return fmt::format("{}/{}/{}/attempt-{}", runs_dir, sweep, run_id, attempt);
  return fmt::format("{}/{}/{}/attempt-{}-{}", runs_dir, sweep, run_id, attempt, database_id);
}

StatusOr<SweepOutcome> ExecuteSweep(const Spec& spec, const Plan& plan, results::Store& store,
                                    Launcher& launcher, const ExecutorOptions& options) {
  Execution execution(spec, plan, store, launcher, options);
  return execution.Run();
}

}  // namespace batchlab::orchestrator
