// Parsing one line of a runner metrics file (docs/protocol.md) without building a JSON tree.
//
// MetricsLineParser streams the line through nlohmann's SAX interface and keeps only what ingest
// stores: `seq`, `kind`, `step`, and every other top-level numeric field as a (name, value)
// metric. Buffers are reused from line to line, so a step line costs no allocation once warm.
// `start` and `end` lines carry string fields too; ingest re-reads those few lines as a tree.
//
// Non-finite numbers are not JSON, but Python's json module writes them (NaN, Infinity,
// -Infinity) and C's printf writes nan/inf: a line that fails to parse only because of such bare
// tokens (or of a number too large for a double, 1e999) is read with them as NaN/±inf values (MetricsLine::non_finite_tokens says so), so a
// diverging run's last lines are not lost; ingest records each one as an event.
//
//   MetricsLineParser parser;
//   const MetricsLine& m = parser.Parse(R"({"seq":3,"kind":"step","step":2,"loss":0.5})");
//   // m.error.empty(), m.seq == 3, m.kind == "step", *m.step == 2, m.values[0] = {"loss", 0.5}
#ifndef BATCHLAB_RESULTS_METRICS_LINE_H_
#define BATCHLAB_RESULTS_METRICS_LINE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace batchlab::results {

struct MetricsLine {
  std::string error;  // empty if the line is a valid record; else why not (for the event)
  int64_t seq = -1;
  std::string kind;
  std::optional<int64_t> step;
  std::vector<std::pair<std::string, double>> values;  // only the first `num_values` are valid
  size_t num_values = 0;
  bool non_finite_tokens = false;  // read with bare NaN/Infinity tokens (not JSON)
  std::string as_json;             // then: the line with those tokens as JSON strings
};

class MetricsLineParser {
 public:
  // Parses `line` (without its newline). The result is valid until the next call.
  const MetricsLine& Parse(std::string_view line);

 private:
  MetricsLine line_;
};

}  // namespace batchlab::results

#endif  // BATCHLAB_RESULTS_METRICS_LINE_H_
