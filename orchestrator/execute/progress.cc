#include "orchestrator/execute/progress.h"

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

void ProgressPrinter::Erase() {
  if (!line_open_) return;
  if (lines_drawn_ > 0) fmt::print(out_, "\033[{}A", lines_drawn_);
  fmt::print(out_, "\r\033[J");
  lines_drawn_ = 0;
}

void ProgressPrinter::RefreshDetail(double now_seconds) {
  if (!detail_ || (last_detail_ >= 0 && now_seconds - last_detail_ < (live_ ? 1.0 : 10.0))) return;
  last_detail_ = now_seconds;
  detail_text_ = detail_();
  if (!live_ && last_.running > 0 && !detail_text_.empty()) {
    fmt::print(out_, "{}", detail_text_);
    std::fflush(out_);
  }
}

void ProgressPrinter::Event(const std::string& line) {
  if (live_) {
    Erase();
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
  RefreshDetail(now_seconds);
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
  Erase();
  fmt::print(out_, "[{}] {}/{} done, {} running, {} failed, {} waiting | ETA {}", sweep_, c.done,
             c.total, c.running, c.failed, c.waiting, eta_text);
  if (c.running > 0 && !detail_text_.empty()) {
    std::string block = detail_text_;
    if (block.back() == '\n') block.pop_back();
    fmt::print(out_, "\n{}", block);
    lines_drawn_ = 1 + static_cast<int>(std::count(block.begin(), block.end(), '\n'));
  }
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
