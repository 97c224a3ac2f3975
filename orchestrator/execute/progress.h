// What a running sweep shows: on a terminal, one live line rewritten in place
//   [quickstart] 7/12 done, 2 running, 1 failed, 0 waiting-retry | ETA 0:42
// and otherwise (a log file, CI) one plain line per event ("run 3f2a... completed in 8.1 s").
// With SetDetail, the live line is followed by a per-run block (step, loss, last eval, ETA of
// each running run: live_progress.h), refreshed at most once a second; without a terminal that
// block is printed every 10 s while runs are running.
// The ETA comes from observed run times: the mean duration of finished attempts times the work
// still waiting, divided by the number of runs that fit side by side.
//
//   ProgressPrinter progress(stderr, isatty(2), "quickstart", /*total=*/12);
//   progress.Event(fmt::format("run {} started", id));
//   progress.Update(counts, now);
#ifndef BATCHLAB_ORCHESTRATOR_EXECUTE_PROGRESS_H_
#define BATCHLAB_ORCHESTRATOR_EXECUTE_PROGRESS_H_

#include <cstdio>
#include <functional>
#include <string>

namespace batchlab::orchestrator {

struct ProgressCounts {
  int total = 0;
  int done = 0;  // finished (any terminal outcome that will not be retried), incl. skipped
  int running = 0;
  int failed = 0;               // failed or timed out for good
  int waiting = 0;              // not started yet (incl. waiting for a retry)
  double mean_run_seconds = 0;  // of finished attempts (0: none yet)
  double parallelism = 1;       // runs that fit side by side
};

// Seconds still needed (-1 when unknown).
double EstimateRemainingSeconds(const ProgressCounts& c);

class ProgressPrinter {
 public:
  ProgressPrinter(std::FILE* out, bool live, std::string sweep);
  ~ProgressPrinter();

  void Event(const std::string& line);                            // a state change worth a line
  void Update(const ProgressCounts& counts, double now_seconds);  // redraws (live) at most 10/s
  void Finish();                                                  // ends the live line
  // Text shown under the live line (may span lines, ends with '\n'); called at most once a
  // second, from the thread that calls Update.
  void SetDetail(std::function<std::string()> detail) { detail_ = std::move(detail); }

 private:
  void Draw(const ProgressCounts& counts);
  void Erase();  // the block drawn last (live mode)
  void RefreshDetail(double now_seconds);
  std::FILE* out_;
  bool live_;
  std::string sweep_;
  double last_draw_ = -1;
  bool line_open_ = false;
  ProgressCounts last_;
  std::function<std::string()> detail_;
  std::string detail_text_;
  double last_detail_ = -1;
  int lines_drawn_ = 0;  // lines of the live block below its first
};

}  // namespace batchlab::orchestrator

#endif  // BATCHLAB_ORCHESTRATOR_EXECUTE_PROGRESS_H_
