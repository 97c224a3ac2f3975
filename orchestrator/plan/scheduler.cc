#include "orchestrator/plan/scheduler.h"

#include <algorithm>
#include <limits>
#include <map>
#include <queue>

namespace batchlab::orchestrator {

LptQueue::LptQueue(int pool_slots) : pool_slots_(std::max(1, pool_slots)) {}

void LptQueue::Add(QueuedJob job) {
  job.slots = std::clamp(job.slots, 1, pool_slots_);
  auto before = [](const QueuedJob& a, const QueuedJob& b) {
    if (a.priority != b.priority) return a.priority < b.priority;
    if (a.expected_seconds != b.expected_seconds) return a.expected_seconds > b.expected_seconds;
    return a.key < b.key;
  };
  jobs_.insert(std::upper_bound(jobs_.begin(), jobs_.end(), job, before), job);
}

std::vector<int> LptQueue::TakeStartable(int free_slots, double now) {
  return TakeStartable(free_slots, now, nullptr);
}

std::vector<int> LptQueue::TakeStartable(int free_slots, double now,
                                         const std::function<bool(int key)>& defer) {
  return TakeStartable(free_slots, std::numeric_limits<int>::max(), now, defer);
}

std::vector<int> LptQueue::TakeStartable(int free_slots, int free_gpus, double now,
                                         const std::function<bool(int key)>& defer) {
  std::vector<int> out;
  // Pass 0 takes the jobs not deferred; pass 1 fills the slots left with the deferred ones.
  for (int pass = 0; pass < (defer ? 2 : 1); ++pass) {
    for (auto it = jobs_.begin(); it != jobs_.end() && free_slots > 0;) {
      const bool ready = it->slots <= free_slots && it->gpus <= free_gpus && it->not_before <= now;
      if (ready && (pass == 1 || !defer || !defer(it->key))) {
        free_slots -= it->slots;
        free_gpus -= it->gpus;
        out.push_back(it->key);
        it = jobs_.erase(it);
      } else {
        ++it;
      }
    }
  }
  return out;
}

double LptQueue::NextReadyTime() const {
  double t = 0;
  for (const auto& j : jobs_) {
    if (j.not_before > 0 && (t == 0 || j.not_before < t)) t = j.not_before;
  }
  return t;
}

int LptQueue::SlotsOf(int key) const {
  for (const auto& j : jobs_) {
    if (j.key == key) return j.slots;
  }
  return 0;
}

int LptQueue::GpusOf(int key) const {
  for (const auto& j : jobs_) {
    if (j.key == key) return j.gpus;
  }
  return 0;
}

double MakespanLowerBound(const std::vector<QueuedJob>& jobs, int pool_slots, int pool_gpus) {
  pool_slots = std::max(1, pool_slots);
  double longest = 0, area = 0, gpu_area = 0;
  for (const auto& j : jobs) {
    longest = std::max(longest, j.expected_seconds);
    area += std::clamp(j.slots, 1, pool_slots) * j.expected_seconds;
    if (pool_gpus > 0) gpu_area += std::clamp(j.gpus, 0, pool_gpus) * j.expected_seconds;
  }
  double bound = std::max(longest, area / pool_slots);
  if (pool_gpus > 0) bound = std::max(bound, gpu_area / pool_gpus);
  return bound;
}

double SimulateMakespan(const std::vector<QueuedJob>& jobs, int pool_slots, int pool_gpus) {
  pool_gpus = std::max(0, pool_gpus);
  LptQueue queue(pool_slots);
  for (QueuedJob j : jobs) {
    j.gpus = std::clamp(j.gpus, 0, pool_gpus);
    queue.Add(j);
  }
  // (end time, key) of running jobs, earliest end first.
  using Running = std::pair<double, int>;
  std::priority_queue<Running, std::vector<Running>, std::greater<>> running;
  std::map<int, double> duration;
  std::map<int, int> slots, gpus;
  for (const auto& j : jobs) {
    duration[j.key] = j.expected_seconds;
    slots[j.key] = std::clamp(j.slots, 1, queue.pool_slots());
    gpus[j.key] = std::clamp(j.gpus, 0, pool_gpus);
  }
  double now = 0, makespan = 0;
  int free_slots = queue.pool_slots();
  int free_gpus = pool_gpus;
  while (!queue.empty() || !running.empty()) {
    for (int key : queue.TakeStartable(free_slots, free_gpus, now, nullptr)) {
      free_slots -= slots[key];
      free_gpus -= gpus[key];
      double end = now + duration[key];
      running.emplace(end, key);
      makespan = std::max(makespan, end);
    }
    if (running.empty()) {
      double next = queue.NextReadyTime();
      if (next <= now) break;  // nothing can ever start: cannot happen after clamping
      now = next;
      continue;
    }
    now = running.top().first;
    while (!running.empty() && running.top().first <= now) {
      free_slots += slots[running.top().second];
      free_gpus += gpus[running.top().second];
      running.pop();
    }
  }
  return makespan;
}

}  // namespace batchlab::orchestrator
