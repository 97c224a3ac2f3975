// `batchlab sweep status` and the running-sweep detail (see live_status.h).
#include "base/elapsed.h"
#include "cli/live_status.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include <fmt/core.h>

#include "orchestrator/execute/live_progress.h"
#include "orchestrator/process/signal_watcher.h"
#include "results/schema.h"
#include "results/sweep_progress.h"

namespace batchlab::cli {

namespace orch = batchlab::orchestrator;

StatusOr<orch::LiveProgress> ReadLiveProgress(const std::string& db_path,
                                              const std::string& sweep) {
  BATCHLAB_ASSIGN_OR_RETURN(auto db, results::OpenReadOnly(db_path));
  BATCHLAB_ASSIGN_OR_RETURN(results::SweepSnapshot snap, results::ReadSweepSnapshot(*db, sweep));
  return orch::ComputeLiveProgress(std::move(snap), UnixSeconds());
}

namespace {

bool Unfinished(const orch::LiveProgress& live) {
  return live.counts.count("running") > 0 || live.counts.count("pending") > 0;
}

}  // namespace

Status ShowSweepStatus(const StatusFlags& f, CliContext& ctx) {
  const std::string& db_path = ctx.db_path;
  if (f.watch_seconds < 0) {
    return InvalidArgumentError(fmt::format(
        "--watch {}: the refresh interval must be positive, e.g. --watch 2", f.watch_seconds));
  }
  const bool json = f.format == "json";
  auto print = [&](const orch::LiveProgress& live) {
    if (json) {
      fmt::print("{}\n", orch::LiveProgressJson(live).dump());
    } else {
      fmt::print("{}", orch::FormatLiveProgress(live, f.all));
    }
  };
  if (f.watch_seconds == 0) {
    BATCHLAB_ASSIGN_OR_RETURN(orch::LiveProgress live, ReadLiveProgress(db_path, f.sweep));
    print(live);
    return OkStatus();
  }
  const bool tty = !json && isatty(fileno(stdout)) != 0;
  orch::SignalWatcher signals;
  // Sleeps one refresh interval; false when a signal asks to stop (then exit 128 + signal).
  auto wait = [&]() -> bool {
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(f.watch_seconds);
    while (std::chrono::steady_clock::now() < until) {
      if (signals.requested()) {  // Ctrl-C ends watching: exit 128 + signal, no error message
        ctx.stopped_by_signal = signals.signal_number();
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return true;
  };
  // Started before the sweep (or its database) exists: wait for it to appear, as `--watch`
  // would wait for its runs; any other error (not a batchlab database, ...) ends at once.
  StatusOr<orch::LiveProgress> first = ReadLiveProgress(db_path, f.sweep);
  for (bool said = false; !first.ok(); first = ReadLiveProgress(db_path, f.sweep)) {
    if (first.status().code() != StatusCode::kNotFound) return first.status();
    if (!said) {
      fmt::print(stderr, "waiting for sweep {} to start in {} (Ctrl-C stops): {}\n", f.sweep,
                 db_path, first.status().message());
      said = true;
    }
    if (!wait()) return OkStatus();
  }
  orch::LiveProgress live = std::move(first).value();
  while (true) {
    if (tty) fmt::print("\033[H\033[2J");  // redraw in place
    print(live);
    if (!tty && !json) fmt::print("\n");
    std::fflush(stdout);
    if (!Unfinished(live)) return OkStatus();
    if (!wait()) return OkStatus();
    BATCHLAB_ASSIGN_OR_RETURN(live, ReadLiveProgress(db_path, f.sweep));
  }
}

std::function<std::string()> RunningRunsDetail(std::string db_path, std::string sweep) {
  return [db_path = std::move(db_path), sweep = std::move(sweep)]() -> std::string {
    StatusOr<orch::LiveProgress> live = ReadLiveProgress(db_path, sweep);
    if (!live.ok()) return "";
    std::string text = orch::FormatLiveProgress(*live, /*all_runs=*/false);
    // Only the table: the live line above already has the counts.
    const size_t table = text.find("\n  run ");
    return table == std::string::npos ? "" : text.substr(table + 1);
  };
}

}  // namespace batchlab::cli
