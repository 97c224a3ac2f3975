// An attempt's life: its folder and the files in it, its launch, the ingest of its metrics and
// its end (see execution.h).
#include <algorithm>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <boost/filesystem.hpp>

#include "base/atomic_file.h"
#include "base/elastic_nodes.h"
#include "base/run_protocol.h"
#include "orchestrator/execute/attempt_policies.h"
#include "orchestrator/execute/attempt_verdict.h"
#include "orchestrator/execute/execution.h"
#include "orchestrator/launch/slurm_elastic.h"
#include "results/number_format.h"

namespace batchlab::orchestrator::execution {
namespace {

namespace fs = boost::filesystem;
using results::RunState;

// The last `max_bytes` of the file at `path`, trailing newlines and spaces dropped: the end of an
// attempt's stderr for its failure message ("" when there is none).
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

}  // namespace

Status Execution::Launch(size_t i) {
  const PlannedRun& r = plan_.runs[i];
  const int attempt = table_[i].attempt + 1;
  BATCHLAB_ASSIGN_OR_RETURN(
      const std::string dir,
      NewFolder(protocol::AttemptDir(runs_dir_, spec_.name, r.id, attempt, store_.database_id())));
  nlohmann::json config = r.config;
  config["attempt"] = attempt;
  config["metrics_path"] = protocol::MetricsPath(dir);
  // Atomic: a program never reads half a config. A full disk is an error of the sweep
  // ("cannot write <dir>/config.json.tmp: No space left on device (is the disk full?)").
  if (Status written = WriteFileAtomically(protocol::ConfigPath(dir), config.dump(2) + "\n");
      !written.ok()) {
    return UnavailableError(written.message());
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
  req.config_path = protocol::ConfigPath(req.attempt_dir);
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
      return InternalError(fmt::format("run {} was started with {} GPU(s) needed but {} free", r.id,
                                       r.gpus, gpu_pool_.free()));
    }
    req.gpu_ids = *ids;
  }
  const double now = now_();
  if (first_start_ == 0) first_start_ = now;
  Status described = DescribeRanks(r, &req);
  if (spec_.slurm.elastic && r.program.builtin) {
    // The attempt may get fewer nodes (slurm_elastic.h): the runner takes its nodes from the
    // ranks it was started with, down to this many.
    req.env[protocol::kElasticMinNodesEnv] =
        std::to_string(ElasticNodeRange(spec_.slurm, req.nodes).first);
  }
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
Status Execution::WriteResumeFile(const std::string& run_id, int attempt, const std::string& dir) {
  nlohmann::json earlier = nlohmann::json::array();
  for (int k = attempt - 1; k >= 1; --k) {
    BATCHLAB_ASSIGN_OR_RETURN(std::optional<std::string> at, store_.AttemptDir(run_id, k));
    if (at) earlier.push_back({{"attempt", k}, {"dir", *at}});
  }
  if (earlier.empty()) return OkStatus();
  const std::string path = protocol::ResumePath(dir);
  const Status written =
      WriteFileAtomically(path, nlohmann::json{{"attempts", earlier}}.dump(2) + "\n");
  if (!written.ok()) return UnavailableError(written.message());
  return OkStatus();
}

// The trunk's attempt folders, newest first (a branch's checkpoint may be in any of them).
StatusOr<std::vector<std::string>> Execution::TrunkDirs(const std::string& trunk_id) {
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
Status Execution::WriteBranchFromFile(const PlannedRun& r, const std::string& dir) {
  BATCHLAB_ASSIGN_OR_RETURN(std::vector<std::string> dirs, TrunkDirs(r.trunk_id));
  const std::string path = protocol::BranchFromPath(dir);
  const Status written =
      WriteFileAtomically(path, nlohmann::json{{"trunk_dirs", dirs}}.dump(2) + "\n");
  if (!written.ok()) return UnavailableError(written.message());
  return OkStatus();
}

// What every rank runs (program.h): the built-in runner, or the user's program through
// batchlab-rank with the torch.distributed environment and a port of its own.
Status Execution::DescribeRanks(const PlannedRun& r, LaunchRequest* req) {
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
StatusOr<std::string> Execution::NewFolder(const std::string& base) {
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

Status Execution::Ingest(InFlight& a, results::IngestPass pass) {
  BATCHLAB_ASSIGN_OR_RETURN(auto stats,
                            store_.IngestMetrics(plan_.runs[a.index].id, a.attempt,
                                                 protocol::MetricsPath(a.dir), pass));
  a.saw_end = a.saw_end || stats.saw_end;
  if (!stats.end_outcome.empty()) a.end_outcome = stats.end_outcome;
  return OkStatus();
}

// Attempt `a`, taken out of the table's in-flight list, ended with `st`: its verdict
// (attempt_verdict.h) recorded, its run moved on (done, queued again, cancelled).
Status Execution::Finish(InFlight a, const JobStatus& st, bool stopping) {
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
  report.stderr_tail = Tail(protocol::StderrPath(a.dir), 1500);
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
    Event(
        fmt::format("run {} preempted after {} s; it resumes in a new attempt", r.id,
                    results::FixedNumber(seconds, 1)));
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
    Event(fmt::format("run {} stalled after {} s", r.id, results::FixedNumber(seconds, 1)));
    return OkStatus();
  }
  if (state == RunState::kPruned) {
    ++out_.pruned;
    Event(fmt::format("run {} pruned after {} s", r.id, results::FixedNumber(seconds, 1)));
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
    Event(fmt::format("run {} {} in {} s", r.id, results::RunStateName(state),
                      results::FixedNumber(seconds, 1)));
    return OkStatus();
  }
  return AfterFailure(a.index, state, message, retryable);
}

Status Execution::AfterFailure(size_t i, RunState state, const std::string& message,
                               bool retryable) {
  const PlannedRun& r = plan_.runs[i];
  std::string first_line = message.substr(0, message.find('\n'));
  const RunSlot& slot = table_[i];
  if (MayRetry(retryable, slot.failures, spec_.resources.retries)) {
    table_.CountFailure(i);
    const double backoff = RetryDelay(slot.failures, spec_.resources.retry_backoff_seconds);
    BATCHLAB_RETURN_IF_ERROR(
        store_.RecordEvent(r.id, "retry",
                           fmt::format("attempt {} {}; retry {} of {} in {} s", slot.attempt,
                                       results::RunStateName(state), slot.failures,
                                       spec_.resources.retries, results::FixedNumber(backoff, 1))));
    BATCHLAB_RETURN_IF_ERROR(store_.Transition(r.id, RunState::kPending, {}));
    BATCHLAB_RETURN_IF_ERROR(Enqueue(i, now_() + backoff));
    Event(fmt::format("run {} {} ({}); retry {}/{} in {} s", r.id, results::RunStateName(state),
                      first_line, slot.failures, spec_.resources.retries,
                      results::FixedNumber(backoff, 1)));
    return OkStatus();
  }
  ++out_.failed;
  BATCHLAB_RETURN_IF_ERROR(table_.Transition(i, RunStage::kDone));
  Event(fmt::format("run {} {}: {}", r.id, results::RunStateName(state), first_line));
  return OkStatus();
}

}  // namespace batchlab::orchestrator::execution
