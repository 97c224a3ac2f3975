#include "orchestrator/launch/worker_pool.h"
#include "base/run_protocol.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "base/elapsed.h"
#include "orchestrator/process/job_processes.h"
#include "orchestrator/launch/local_launcher.h"

namespace batchlab::orchestrator {
namespace {

namespace fs = std::filesystem;

std::optional<int> ReadCode(const std::string& path) {
  std::ifstream in(path);
  int code = 0;
  if (in >> code) return code;
  return std::nullopt;
}

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in, nullptr, false);
}

// Appends the worker's own log to the attempt's: what the launcher (mpirun, slurmstepd) said when
// the worker ended in the middle of the run, kept after the pool removes the worker's folder.
void AppendWorkerLog(const std::string& worker_dir, const std::string& attempt_dir) {
  for (const char* name : {protocol::kStdoutFile, protocol::kStderrFile}) {
    std::ifstream in(worker_dir + "/" + name);
    std::stringstream text;
    text << in.rdbuf();
    if (text.str().empty()) continue;
    std::ofstream(protocol::StderrPath(attempt_dir), std::ios::app)
        << fmt::format("batchlab: the worker that ran this attempt ended; its {} ({}):\n{}", name,
                       worker_dir, text.str());
  }
}

struct Worker {
  std::string key;
  std::string dir;
  int world_size = 1;
  std::vector<int> gpu_ids;  // the GPUs its ranks hold (CUDA_VISIBLE_DEVICES), for its lifetime
  std::unique_ptr<Job> job;  // the worker's mpirun or sbatch job, from the inner launcher
  int next = 1;              // the number of its next job
  double submitted = 0;      // when the inner launcher started it (pool clock)
  double idle_since = 0;     // when its last run ended (pool clock); meaningful when not busy
  bool busy = false;
  bool retired = false;  // asked to quit or stopped: never handed another run
  bool ended = false;
  JobStatus end;

  JobStatus Poll() {
    if (!ended) {
      end = job->Poll();
      ended = end.done;
    }
    return end;
  }
  bool Ready() const { return fs::exists(protocol::WorkerReadyPath(dir, 0)); }
  // Where it runs as the inner launcher last said (Slurm: the allocation's nodes), else "".
  const std::string& host() const { return end.host; }
  void Retire() {
    if (retired) return;
    retired = true;
    // The SIGTERM below stops it too.
    WriteFileAtomically(protocol::WorkerQuitPath(dir), "").IgnoreError();
    if (!ended) job->Terminate();
  }
  // Every rank's exit code for job n once all have written theirs: the first failure, else
  // rank 0's outcome.
  std::optional<int> Done(int n) const {
    std::optional<int> result;
    for (int r = 0; r < world_size; ++r) {
      auto code = ReadCode(protocol::WorkerDonePath(dir, n, r));
      if (!code) return std::nullopt;
      if (r == 0 || (!protocol::IsFinalExitCode(*code) && protocol::IsFinalExitCode(*result)))
        result = code;
    }
    return result;
  }
};

class Pool;

class WarmJob final : public Job {
 public:
  WarmJob(Pool& pool, std::shared_ptr<Worker> worker, int n, LaunchRequest request)
      : pool_(pool), worker_(std::move(worker)), n_(n), request_(std::move(request)) {}
  ~WarmJob() override {
    if (!cold_ && !finished_) worker_->Retire();  // abandoned mid-run: never reuse it
  }

  JobStatus Poll() override;
  void Terminate() override {
    if (cold_) return cold_->Terminate();
    worker_->Retire();
  }
  void Kill() override {
    if (cold_) return cold_->Kill();
    worker_->retired = true;
    if (!worker_->ended) worker_->job->Kill();
  }

 private:
  JobStatus Finish(int code);
  JobStatus WorkerEnded(const JobStatus& ws);
  std::string Host() const;

  Pool& pool_;
  std::shared_ptr<Worker> worker_;
  int n_;
  LaunchRequest request_;
  std::unique_ptr<Job> cold_;  // set when the runner turned out not to speak the protocol
  bool finished_ = false;
  JobStatus final_;
};

class Pool final : public Launcher {
 public:
  Pool(std::unique_ptr<Launcher> inner, WorkerPoolSettings settings)
      : inner_(std::move(inner)), settings_(std::move(settings)), host_(HostName()) {
    if (!settings_.clock) settings_.clock = SteadySeconds;
  }

  ~Pool() override {
    for (auto& w : workers_) w->Retire();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    for (auto& w : workers_) {
      while (!w->Poll().done && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
    workers_.clear();  // LocalJob's destructor kills what is left
    std::error_code ec;
    if (!base_.empty()) fs::remove_all(base_, ec);
  }

  const char* name() const override { return inner_->name(); }

  StatusOr<std::unique_ptr<Job>> Start(const LaunchRequest& request) override {
    if (!Pooled(request)) return inner_->Start(request);
    Housekeep();
    RetireIdle();
    const std::string key = Key(request);
    for (auto& w : workers_) {
      if (w->busy || w->retired || w->key != key || w->Poll().done) continue;
      if (Fits(*w, request)) return Assign(w, request);
      // Its allocation would end before this run might: retire it (the runs of a sweep share
      // one timeout, so no later run fits either) and give the run a new worker.
      w->Retire();
    }
    // An idle worker keeps its GPUs' memory: one on a GPU this run was handed is retired first.
    for (auto& w : workers_) {
      if (!w->busy && !w->retired && SharesGpu(*w, request)) w->Retire();
    }
    // Under Slurm an idle worker's allocation holds nodes the executor counts as free (its run
    // ended): the new worker's job may be waiting for exactly those, so every idle one goes.
    if (settings_.idle_workers_hold_nodes) {
      for (auto& w : workers_) {
        if (!w->busy && !w->retired) w->Retire();
      }
    }
    // A new worker; retire idle ones (another shape first) to stay within max_workers.
    for (int pass = 0; pass < 2 && Live() >= settings_.max_workers; ++pass) {
      for (auto& w : workers_) {
        if (Live() < settings_.max_workers) break;
        if (!w->busy && !w->retired && (pass == 1 || w->key != key)) w->Retire();
      }
    }
    if (base_.empty()) {
      std::error_code ec;
      const fs::path parent =
          settings_.dir.empty() ? fs::temp_directory_path(ec) : fs::absolute(settings_.dir, ec);
      fs::create_directories(parent, ec);
      std::string pattern = (parent / "batchlab-workers-XXXXXX").string();
      if (mkdtemp(pattern.data()) == nullptr) return inner_->Start(request);  // run it cold
      base_ = pattern;
    }
    auto w = std::make_shared<Worker>();
    w->key = key;
    w->world_size = request.world_size;
    w->gpu_ids = request.gpu_ids;
    w->dir = fmt::format("{}/w{}", base_, ++started_);
    std::error_code ec;
    fs::create_directories(w->dir, ec);
    if (ec) return inner_->Start(request);  // no room for a worker: run it cold
    LaunchRequest wr = request;
    wr.run_id = fmt::format("worker-w{}", started_);  // Slurm: job name batchlab-worker-w<n>-1
    wr.attempt = 1;
    wr.attempt_dir = w->dir;
    wr.config_path.clear();
    wr.rank_command = {settings_.runner, "--worker", w->dir};
    wr.timeout_seconds = 0;
    auto job = inner_->Start(wr);
    if (!job.ok()) return job.status();
    w->job = std::move(job).value();
    w->submitted = Now();
    workers_.push_back(w);
    return Assign(w, request);
  }

  void CleanUpStale(const std::string& attempt_dir) override {
    const nlohmann::json launch = ReadJson(protocol::LaunchPath(attempt_dir));
    // A local worker's processes are found by its folder; another backend's worker is a job the
    // inner launcher stops from the record Assign copied (Slurm: scancel of its job id).
    if (launch.is_object() && launch.value("backend", "local") == "local" &&
        launch.contains("worker_dir") && launch["worker_dir"].is_string()) {
      if (launch.value("host", host_) != host_) return;  // started elsewhere
      JobProcesses{0, launch["worker_dir"].get<std::string>()}.Stop(std::chrono::seconds(5));
      return;
    }
    inner_->CleanUpStale(attempt_dir);
  }

  // For WarmJob.
  Launcher& inner() { return *inner_; }
  void MarkUnsupported() { unsupported_ = true; }
  const std::string& host() const { return host_; }
  double Now() const { return settings_.clock(); }

  // Retires idle workers given no run for settings.idle_seconds (under Slurm an idle worker
  // holds nodes). Called on every Start and every poll of a pooled run.
  void RetireIdle() {
    if (settings_.idle_seconds <= 0) return;
    const double now = Now();
    for (auto& w : workers_) {
      if (!w->busy && !w->retired && now - w->idle_since >= settings_.idle_seconds) w->Retire();
    }
  }

 private:
  bool Pooled(const LaunchRequest& r) const {
    return !unsupported_ && !settings_.runner.empty() && r.launch == LaunchMode::kMpirun &&
           r.workdir.empty() && r.rank_command.size() == 3 &&
           r.rank_command[0] == settings_.runner && r.rank_command[1] == "--config";
  }

  static std::string Key(const LaunchRequest& r) {
    std::string key = fmt::format("{} {} {} {} {}", r.world_size, r.nodes, r.ranks_per_node,
                                  r.slots, r.cpus_per_rank);
    for (const auto& [k, v] : r.env) key += "\n" + k + "=" + v;
    // A worker's ranks stay on the GPUs it started with: reused only for a run handed the same.
    key += "\ngpus=";
    for (int id : r.gpu_ids) key += std::to_string(id) + ",";
    return key;
  }

  // Whether `r` may join `w`'s allocation: its age since submission (an upper bound on the
  // allocation's age) plus the longest the run may take (its timeout; without one, a whole
  // allocation, as a cold job would have) is within the allocation's time limit.
  bool Fits(const Worker& w, const LaunchRequest& r) const {
    const double limit = settings_.allocation_seconds;
    if (limit <= 0) return true;
    const double longest = r.timeout_seconds > 0 ? std::min(r.timeout_seconds, limit) : limit;
    return Now() - w.submitted + longest <= limit;
  }

  static bool SharesGpu(const Worker& w, const LaunchRequest& r) {
    for (int id : w.gpu_ids) {
      if (std::find(r.gpu_ids.begin(), r.gpu_ids.end(), id) != r.gpu_ids.end()) return true;
    }
    return false;
  }

  int Live() {
    int n = 0;
    for (auto& w : workers_) n += !w->retired && !w->Poll().done;
    return n;
  }

  // Forgets workers that have ended (their folders stay until the pool ends).
  void Housekeep() {
    std::vector<std::shared_ptr<Worker>> keep;
    for (auto& w : workers_) {
      if (w->busy || !w->Poll().done) keep.push_back(w);
    }
    workers_.swap(keep);
  }

  StatusOr<std::unique_ptr<Job>> Assign(const std::shared_ptr<Worker>& w,
                                        const LaunchRequest& request) {
    const int n = w->next++;
    if (!WriteFileAtomically(protocol::WorkerJobPath(w->dir, n),
                             nlohmann::json{{"config", request.config_path}}.dump() + "\n")
             .ok()) {
      w->Retire();
      return UnavailableError(fmt::format("cannot hand run {} to worker {} (is the disk full?)",
                                          request.run_id, w->dir));
    }
    w->busy = true;
    // Like a cold launch's launch.json: a later orchestrator stops the worker through it. The
    // inner launcher's record of the worker's own job (Slurm: job_id) is copied in.
    nlohmann::json launch = {{"backend", inner_->name()},
                             {"host", host_},
                             {"attempt_dir", request.attempt_dir},
                             {"worker_dir", w->dir},
                             {"worker_job", n}};
    const nlohmann::json worker_launch = ReadJson(protocol::LaunchPath(w->dir));
    if (worker_launch.is_object()) {
      for (const auto& [k, v] : worker_launch.items()) {
        if (!launch.contains(k)) launch[k] = v;
      }
    }
    std::ofstream(protocol::LaunchPath(request.attempt_dir)) << launch.dump(2) << "\n";
    return std::unique_ptr<Job>(std::make_unique<WarmJob>(*this, w, n, request));
  }

  std::unique_ptr<Launcher> inner_;
  WorkerPoolSettings settings_;
  std::string host_;
  std::string base_;
  int started_ = 0;
  bool unsupported_ = false;
  std::vector<std::shared_ptr<Worker>> workers_;
};

std::string WarmJob::Host() const {
  return worker_->host().empty() ? pool_.host() : worker_->host();
}

JobStatus WarmJob::Finish(int code) {
  finished_ = true;
  worker_->busy = false;
  worker_->idle_since = pool_.Now();
  if (!protocol::IsFinalExitCode(code)) worker_->Retire();  // it exits by itself; make sure
  final_ = JobStatus{};
  final_.done = true;
  final_.exit_code = code;
  final_.host = Host();
  return final_;
}

JobStatus WarmJob::Poll() {
  if (cold_) return cold_->Poll();
  if (finished_) return final_;
  pool_.RetireIdle();
  if (auto code = worker_->Done(n_)) return Finish(*code);
  JobStatus ws = worker_->Poll();
  if (!ws.done) {
    // Running, or (Slurm) still pending in the queue: either way the run waits.
    JobStatus running;
    running.host = Host();
    running.detail = ws.detail;
    return running;
  }
  if (auto code = worker_->Done(n_)) return Finish(*code);  // it ended right after writing
  return WorkerEnded(ws);
}

// The worker ended without reporting run n.
JobStatus WarmJob::WorkerEnded(const JobStatus& ws) {
  worker_->busy = false;
  // Ended by itself with an exit code: not stopped by the pool (Terminate, Kill, retired) nor by
  // the backend (a signal: scancel, a time limit; a job Slurm can never run).
  const bool ended_by_itself = !worker_->retired && ws.exit_code && !ws.signal && !ws.unrunnable;
  worker_->retired = true;
  if (n_ == 1 && ended_by_itself && !worker_->Ready()) {
    // The runner does not speak the worker protocol (or could not start): run it cold, as the
    // launch the executor asked for, and stop pooling.
    pool_.MarkUnsupported();
    auto cold = pool_.inner().Start(request_);
    if (cold.ok()) {
      cold_ = std::move(cold).value();
      return cold_->Poll();
    }
    // The cold launch failed too: a failed attempt (retried as usual), not the worker's code.
    finished_ = true;
    final_ = JobStatus{};
    final_.done = true;
    final_.exit_code = 1;
    final_.detail = cold.status().message();
    final_.host = pool_.host();
    return final_;
  }
  AppendWorkerLog(worker_->dir, request_.attempt_dir);
  finished_ = true;
  final_ = ws;
  final_.host = Host();
  return final_;
}

}  // namespace

std::unique_ptr<Launcher> MakeWorkerPool(std::unique_ptr<Launcher> inner,
                                         WorkerPoolSettings settings) {
  return std::make_unique<Pool>(std::move(inner), std::move(settings));
}

}  // namespace batchlab::orchestrator
