// Times as seconds in a double, one spelling of each: durations on the steady clock, a steady
// "now" for clocks held as numbers, and the wall clock for timestamps. Every part of the tree
// (runner, orchestrator, results, cli, tests, bench) uses these; private copies cannot sit side by
// side in a unity build.
#ifndef BATCHLAB_BASE_ELAPSED_H_
#define BATCHLAB_BASE_ELAPSED_H_

#include <chrono>

namespace batchlab {

inline double SecondsBetween(std::chrono::steady_clock::time_point from,
                             std::chrono::steady_clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// Seconds from `start` to now on the steady clock (how long a step, a collective or a wait took).
inline double SecondsSince(std::chrono::steady_clock::time_point start) {
  return SecondsBetween(start, std::chrono::steady_clock::now());
}

// The steady clock's now as seconds from its own (arbitrary) epoch: for clocks passed around as
// numbers (the executor's, the warm-worker pool's, a Slurm job's waiting time); only differences
// of two of these mean anything.
inline double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Seconds since the Unix epoch (the wall clock; metrics lines' and the database's timestamps).
inline double UnixSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace batchlab

#endif  // BATCHLAB_BASE_ELAPSED_H_
