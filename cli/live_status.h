// The live views of a sweep in the terminal (orchestrator/execute/live_progress.h over a read-only
// connection): `batchlab sweep status NAME [--watch [SECONDS]] [--all]` and the per-run block
// under the live line of a running `batchlab sweep run`.
//
//   batchlab sweep status quickstart --watch       # redraws every 2 s until no run is left to run
#ifndef BATCHLAB_CLI_LIVE_STATUS_H_
#define BATCHLAB_CLI_LIVE_STATUS_H_

#include <functional>
#include <string>

#include "base/status.h"
#include "cli/commands.h"
#include "orchestrator/execute/live_progress.h"

namespace batchlab::cli {

struct StatusFlags {
  std::string sweep;
  double watch_seconds = 0;      // 0: print once
  bool all = false;              // every run, not only the running ones
  std::string format = "table";  // or "json": LiveProgressJson, one object per line per refresh
};

// The live progress of the latest version of `sweep`, over a read-only connection.
StatusOr<orchestrator::LiveProgress> ReadLiveProgress(const std::string& db_path,
                                                      const std::string& sweep);

// Prints the sweep's progress once, or (watch_seconds > 0) redraws it until every run is
// finished or failed; a sweep (or database) not there yet is waited for. SIGINT/SIGTERM ends the
// watch quietly: OK with ctx.stopped_by_signal set (exit 128 + signal, no error message).
Status ShowSweepStatus(const StatusFlags& flags, CliContext& ctx);

// The running runs of `sweep` as a table (empty when none or the database cannot be read yet),
// for orchestrator::ProgressPrinter::SetDetail.
std::function<std::string()> RunningRunsDetail(std::string db_path, std::string sweep);

}  // namespace batchlab::cli

#endif  // BATCHLAB_CLI_LIVE_STATUS_H_
