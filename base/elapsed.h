// Times as seconds in a double, one spelling of each (the private copies in the trainer, results
// and live progress could not sit side by side in a unity build).
#ifndef BATCHLAB_BASE_ELAPSED_H_
#define BATCHLAB_BASE_ELAPSED_H_

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

#endif  // BATCHLAB_BASE_ELAPSED_H_
