// libFuzzer target: one metrics line -> MetricsLineParser (see fuzz_inputs.h).
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "fuzz/fuzz_inputs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string problem =
      batchlab::fuzz::FuzzMetricsLine({reinterpret_cast<const char*>(data), size});
  if (!problem.empty()) {
    std::fprintf(stderr, "metrics_line_fuzzer: %s\n", problem.c_str());
    std::abort();
  }
  return 0;
}
