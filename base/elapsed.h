#pragma once
// Times as seconds in a double: the one spelling of each (before, each file that timed something
// had its own copy, which a unity build cannot hold side by side).
#include <chrono>

namespace batchlab {

inline double SecondsBetween(std::chrono::steady_clock::time_point from,
                             std::chrono::steady_clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// Seconds since the Unix epoch (the wall clock; metrics lines' and the database's timestamps).
inline double UnixSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace batchlab
