// Packing runs onto a pool of slots (cores) and GPUs: longest-expected-first list scheduling
// with backfill. Whenever slots or GPUs free up, the longest waiting run that fits both starts
// (a run waiting for GPUs lets shorter CPU-only runs use the free slots); a run needing more
// slots than the pool has is clamped to the whole pool (it runs alone, oversubscribed). GPUs are
// never clamped: a run needing more GPUs than the pool has is refused before the sweep starts
// (gpu_slots.h, CheckGpuNeeds). The makespan of such a schedule stays close to the lower bound
//
//   LB = max(longest run, sum(slots_i x seconds_i) / pool slots, sum(gpus_i x seconds_i) / GPUs)
//
// (Graham 1969: LPT on identical single-slot jobs is within 4/3 - 1/(3m) of the optimum).
//
//   LptQueue queue(/*pool_slots=*/2);
//   queue.Add({.key = 0, .slots = 1, .expected_seconds = 30});
//   for (int key : queue.TakeStartable(free_slots, now)) Start(key);
//   queue.Add({.key = 1, .slots = 4, .expected_seconds = 60, .gpus = 4});
//   for (int key : queue.TakeStartable(free_slots, free_gpus, now, nullptr)) Start(key);
//   queue.Add({.key = 0, .slots = 1, .expected_seconds = 30, .not_before = now + backoff});
#ifndef BATCHLAB_ORCHESTRATOR_PLAN_SCHEDULER_H_
#define BATCHLAB_ORCHESTRATOR_PLAN_SCHEDULER_H_

#include <cstddef>
#include <functional>
#include <vector>

namespace batchlab::orchestrator {

struct QueuedJob {
  int key = 0;                  // caller's handle (index of the run)
  int slots = 1;                // clamped to [1, pool slots] by Add
  double expected_seconds = 0;  // ordering key: longest first
  double not_before = 0;        // earliest start (retry backoff), same clock as `now`
  int priority = 0;             // lower first (e.g. first seeds before second seeds), then longest
  int gpus = 0;                 // GPUs the run occupies (world_size x gpus_per_rank), not clamped
};

class LptQueue {
 public:
  explicit LptQueue(int pool_slots);

  void Add(QueuedJob job);
  // Removes and returns (in start order) the keys of the jobs to start now with `free_slots`.
  std::vector<int> TakeStartable(int free_slots, double now);
  // The same, but a job for which `defer(key)` is true is taken only when no job that is not
  // deferred fits the slots left: deferring reorders, it never leaves a slot idle. `defer` is
  // asked once per ready job that fits, in queue order; a job it answers false for is taken.
  std::vector<int> TakeStartable(int free_slots, double now,
                                 const std::function<bool(int key)>& defer);
  // The same with GPUs counted too: a job is taken only when its slots and its GPUs are free
  // (`free_gpus`); the overloads above do not count GPUs.
  std::vector<int> TakeStartable(int free_slots, int free_gpus, double now,
                                 const std::function<bool(int key)>& defer);
  bool empty() const { return jobs_.empty(); }
  std::size_t size() const { return jobs_.size(); }
  // Earliest not_before among waiting jobs (0 if none waits for backoff).
  double NextReadyTime() const;
  int pool_slots() const { return pool_slots_; }
  int SlotsOf(int key) const;  // slots of a queued job after clamping (0 if not queued)
  int GpusOf(int key) const;   // GPUs of a queued job (0 if not queued)

 private:
  int pool_slots_;
  std::vector<QueuedJob> jobs_;  // sorted: longest expected first, then key
};

// max(longest, total slot-seconds / pool_slots, total GPU-seconds / pool_gpus), with each job's
// slots clamped to the pool (the GPU term only when pool_gpus > 0).
double MakespanLowerBound(const std::vector<QueuedJob>& jobs, int pool_slots, int pool_gpus = 0);

// Event simulation of LptQueue on jobs whose true duration is their expected_seconds: the
// makespan the scheduler achieves (tests and the benchmark compare it with the lower bound).
// GPUs are counted with `pool_gpus`; a job needing more than the pool has (refused by a real
// sweep) is simulated with the whole pool's GPUs.
double SimulateMakespan(const std::vector<QueuedJob>& jobs, int pool_slots, int pool_gpus = 0);

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_PLAN_SCHEDULER_H_
