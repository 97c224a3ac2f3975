// Rank 0's metrics stream (docs/protocol.md): one JSON object per line, each with a strictly
// increasing `seq` from 0 and a `kind`, written straight to metrics_path and flushed per line so
// the orchestrator can ingest a running job. Only the `end` line marks a finished run.
//
//   std::unique_ptr<MetricsWriter> out = MetricsWriter::Open(config.metrics_path);
//   nlohmann::ordered_json line = {{"kind", "step"}, {"step", 1}, {"loss", 2.3}};
//   out->Write(line);   // -> {"seq":0,"kind":"step","step":1,"loss":2.3}\n
#ifndef BATCHLAB_RUNNER_TRAIN_METRICS_WRITER_H_
#define BATCHLAB_RUNNER_TRAIN_METRICS_WRITER_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace batchlab::runner {

class MetricsWriter {
 public:
  // Creates (truncates) `path`, making its folder if needed; throws RunnerError on failure.
  // An empty path writes to nowhere (for --validate-style dry runs and tests).
  static std::unique_ptr<MetricsWriter> Open(const std::string& path);
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;

  // Puts `seq` first, then the line's own fields; writes one line and flushes it.
  void Write(const nlohmann::ordered_json& line);
  int64_t next_seq() const { return seq_; }
  // A resumed attempt continues the numbering where its checkpoint left it (docs/protocol.md).
  void set_next_seq(int64_t seq) { seq_ = seq; }

 private:
  MetricsWriter(std::FILE* file, std::string path) : file_(file), path_(std::move(path)) {}
  std::FILE* file_;
  std::string path_;
  int64_t seq_ = 0;
  std::string buffer_;
};

}  // namespace batchlab::runner

#endif  // BATCHLAB_RUNNER_TRAIN_METRICS_WRITER_H_
