// ExecuteSweep and the loop that runs a sweep (see sweep_executor.h and, for the rest of the
// Execution, execution.h).
#include "orchestrator/execute/sweep_executor.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <boost/filesystem.hpp>

#include "base/elapsed.h"
#include "orchestrator/execute/attempt_policies.h"
#include "orchestrator/execute/execution.h"

namespace batchlab::orchestrator::execution {
namespace {

namespace fs = boost::filesystem;

}  // namespace

Execution::Execution(const Spec& spec, const Plan& plan, results::Store& store, Launcher& launcher,
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

StatusOr<SweepOutcome> Execution::Run() {
  // A run needing more GPUs than the pool has could never start: refused before anything.
  if (options_.gpus >= 0) BATCHLAB_RETURN_IF_ERROR(CheckGpuNeeds(spec_, plan_, options_.gpus));
  BATCHLAB_ASSIGN_OR_RETURN(
      auto sweep, OpenSweep(store_, spec_, options_.new_version, &out_.new_sweep, &out_.extended));
  out_.sweep_id = sweep.id;
  out_.version = sweep.version;
  out_.total = static_cast<int>(plan_.runs.size());
  BATCHLAB_RETURN_IF_ERROR(Prepare());
  BATCHLAB_RETURN_IF_ERROR(Loop());
  if (options_.progress != nullptr) options_.progress->Finish();
  return out_;
}

Status Execution::Prepare() {
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

Status Execution::Loop() {
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
      const int free_gpus = options_.gpus < 0 ? std::numeric_limits<int>::max() : gpu_pool_.free();
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
        const double every = prune_.HasBar(a.index) ? std::min(options_.ingest_every_seconds,
                                                               options_.prune_ingest_every_seconds)
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
void Execution::Escalate(InFlight& a, double now) {
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

void Execution::Event(const std::string& line) {
  if (options_.progress != nullptr) options_.progress->Event(line);
}

void Execution::ReportProgress(double now) {
  if (options_.progress == nullptr) return;
  ProgressCounts c;
  c.total = out_.total;
  c.done = out_.skipped + out_.earlier_unfinished + out_.succeeded + out_.failed +
           out_.cancelled + out_.pruned;
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

}  // namespace batchlab::orchestrator::execution

namespace batchlab::orchestrator {

StatusOr<SweepOutcome> ExecuteSweep(const Spec& spec, const Plan& plan, results::Store& store,
                                    Launcher& launcher, const ExecutorOptions& options) {
  execution::Execution execution(spec, plan, store, launcher, options);
  return execution.Run();
}

}  // namespace batchlab::orchestrator
