// A count with its noun in agreement: Count(1, "run") is "1 run", Count(12, "run") "12 runs",
// Count(2, "match", "matches") "2 matches". Every message that counts things uses it.
#ifndef BATCHLAB_BASE_COUNT_TEXT_H_
#define BATCHLAB_BASE_COUNT_TEXT_H_

#include <string>

namespace batchlab {

inline std::string Count(long long n, const std::string& singular, const std::string& plural = "") {
  return std::to_string(n) + " " + (n == 1 ? singular : plural.empty() ? singular + "s" : plural);
}

}  // namespace batchlab

#endif  // BATCHLAB_BASE_COUNT_TEXT_H_
