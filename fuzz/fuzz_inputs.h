// What the fuzz targets do with one input, shared with the test that replays the corpus and every
// crash input ever found (fuzz/regressions/) in the normal build. Each returns "" when the
// input was handled as promised, else what went wrong (the fuzz target then aborts, so libFuzzer
// keeps the input):
//
//   FuzzSpecText: ParseSpec, then ExpandSpec when the cross product is small. Any input must be
//     accepted or refused with INVALID_ARGUMENT prefixed by the source name; an accepted plan
//     has world sizes and slots >= 1, batch sizes divisible by world_size x accumulation, and
//     16-hex-digit ids.
//   FuzzMetricsLine: MetricsLineParser::Parse gives the same record for a line whether or not
//     other lines were parsed before it (its buffers are reused), and a valid record has a kind.
//
// Sanitizers (ASan, UBSan) catch the rest: out-of-bounds reads, overflow, leaks.
#ifndef BATCHLAB_FUZZ_FUZZ_INPUTS_H_
#define BATCHLAB_FUZZ_FUZZ_INPUTS_H_

#include <string>
#include <string_view>

namespace batchlab::fuzz {

std::string FuzzSpecText(std::string_view text);
std::string FuzzMetricsLine(std::string_view line);

}  // namespace batchlab::fuzz

#endif  // BATCHLAB_FUZZ_FUZZ_INPUTS_H_
