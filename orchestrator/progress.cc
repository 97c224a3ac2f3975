#include "orchestrator/progress.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace batchlab::orchestrator {

double EstimateRemainingSeconds(const ProgressCounts& c) {
  if (c.mean_run_seconds <= 0) return -1;
  double left = c.waiting + 0.5 * c.running;
  return left * c.mean_run_seconds / std::max(1.0, c.parallelism);
}

ProgressPrinter::ProgressPrinter(std::FILE* out, bool live, std::string sweep)
    : out_(out), live_(live), sweep_(std::move(sweep)) {}

ProgressPrinter::~ProgressPrinter() { Finish(); }

void ProgressPrinter::Event(const std::string& line) {
  if (live_) {
    if (line_open_) fmt::print(out_, "\r\033[K");
    fmt::print(out_, "{}\n", line);
    line_open_ = false;
    Draw(last_);
  } else {
    fmt::print(out_, "[{}] {}\n", sweep_, line);
  }
  std::fflush(out_);
}

void ProgressPrinter::Update(const ProgressCounts& counts, double now_seconds) {
  last_ = counts;
  if (!live_) return;
  if (last_draw_ >= 0 && now_seconds - last_draw_ < 0.1) return;
  last_draw_ = now_seconds;
  Draw(counts);
}

void ProgressPrinter::Draw(const ProgressCounts& c) {
  if (!live_ || c.total == 0) return;
  double eta = EstimateRemainingSeconds(c);
  std::string eta_text =
      eta < 0 ? "?"
              : fmt::format("{}:{:02d}", static_cast<int>(eta) / 60, static_cast<int>(eta) % 60);
  fmt::print(out_, "\r\033[K[{}] {}/{} done, {} running, {} failed, {} waiting | ETA {}", sweep_,
             c.done, c.total, c.running, c.failed, c.waiting, eta_text);
  std::fflush(out_);
  line_open_ = true;
}

void ProgressPrinter::Finish() {
  if (live_ && line_open_) {
    Draw(last_);  // the final counts, even if the last update was rate-limited
    fmt::print(out_, "\n");
    std::fflush(out_);
    line_open_ = false;
  }
}

}  // namespace batchlab::orchestrator
