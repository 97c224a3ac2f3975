// The runner ⇄ orchestrator protocol (docs/protocol.md), declared once: the outcomes a run can end
// with and their exit codes, the files of an attempt folder, the kinds of metrics lines and the
// metric names more than one folder reads. The runner, the orchestrator, results and analysis use
// these names; the Python client's copy (clients/python/batchlab/protocol.py) is checked against
// this header by a test (tests/clients/protocol_parity_test.py).
//
//   protocol::ExitCodeFor(protocol::Outcome::kPreempted);      // 7
//   protocol::OutcomeForExitCode(3);                          // Outcome::kTargetReached
//   protocol::MetricsPath(dir);                                // dir + "/metrics.jsonl"
//
// Header only, no dependencies: every layer (and the runner, with LibTorch) includes it.
#ifndef BATCHLAB_BASE_RUN_PROTOCOL_H_
#define BATCHLAB_BASE_RUN_PROTOCOL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace batchlab::protocol {

// 2: checkpoints, the `preempted` outcome (exit 7), `resume` lines and resume.json.
inline constexpr int kVersion = 2;

// How a run (or an attempt, for kPreempted) ended on its own terms.
enum class Outcome {
  kCompleted,        // budget used up, no target was set
  kTargetReached,    // the target was met
  kDiverged,         // loss NaN/Inf or above divergence_factor × the first loss
  kBudgetExhausted,  // a target was set and the budget ran out first
  kPruned,           // the orchestrator asked it to stop (stop or prune_at file)
  kPreempted,        // a signal (Slurm limit, preemption, SIGTERM): checkpointed, not finished
};

struct OutcomeEntry {
  Outcome outcome;
  std::string_view name;
  int exit_code;
  bool final;  // the run is finished (never re-run); false: a new attempt resumes it
};

inline constexpr OutcomeEntry kOutcomes[] = {
    {Outcome::kCompleted, "completed", 0, true},
    {Outcome::kTargetReached, "target_reached", 3, true},
    {Outcome::kDiverged, "diverged", 4, true},
    {Outcome::kBudgetExhausted, "budget_exhausted", 5, true},
    {Outcome::kPruned, "pruned", 6, true},
    {Outcome::kPreempted, "preempted", 7, false},
};

// Exit codes that are not outcomes.
inline constexpr int kExitFailed = 1;     // anything else: retried
inline constexpr int kExitBadConfig = 2;  // invalid config or missing data: never retried

constexpr const OutcomeEntry& EntryOf(Outcome outcome) {
  for (const OutcomeEntry& e : kOutcomes) {
    if (e.outcome == outcome) return e;
  }
  return kOutcomes[0];
}
constexpr std::string_view OutcomeName(Outcome outcome) { return EntryOf(outcome).name; }
constexpr int ExitCodeFor(Outcome outcome) { return EntryOf(outcome).exit_code; }
constexpr std::optional<Outcome> OutcomeForExitCode(int code) {
  for (const OutcomeEntry& e : kOutcomes) {
    if (e.exit_code == code) return e.outcome;
  }
  return std::nullopt;
}
// Whether a process that exited with `code` ended a run on the protocol's terms with a final
// outcome (0, 3-6): its run is finished, and a warm worker or the other ranks go on as usual. Any
// other code (1, 2, 7 = preempted, 128 + signal) is not.
constexpr bool IsFinalExitCode(int code) {
  const std::optional<Outcome> outcome = OutcomeForExitCode(code);
  return outcome.has_value() && EntryOf(*outcome).final;
}
constexpr std::optional<Outcome> ParseOutcome(std::string_view name) {
  for (const OutcomeEntry& e : kOutcomes) {
    if (e.name == name) return e.outcome;
  }
  return std::nullopt;
}

// The attempt folder (`<runs-dir>/<sweep>/<run-id>/attempt-<n>-<database id>/`).
inline constexpr const char* kConfigFile = "config.json";     // the resolved config
inline constexpr const char* kMetricsFile = "metrics.jsonl";  // rank 0's lines
inline constexpr const char* kStderrFile = "stderr.log";
inline constexpr const char* kStdoutFile = "stdout.log";
inline constexpr const char* kStopFile = "stop";         // orchestrator: end after this step
inline constexpr const char* kPruneAtFile = "prune_at";  // orchestrator: the self-stop bound
inline constexpr const char* kPreemptFile = "preempt";   // checkpoint at the next step and exit 7
inline constexpr const char* kResumeFile = "resume.json";  // earlier attempts' folders, newest first
inline constexpr const char* kCheckpointDir = "checkpoints";  // step-<8 digits>.rank-<r>.ckpt
// A branch run: {"trunk_dirs": [the trunk's attempt folders, newest first]}
inline constexpr const char* kBranchFromFile = "branch_from.json";
// Rank `rank`'s shard of the checkpoint at `step`: "step-00000040.rank-0.ckpt".
inline std::string CheckpointShardName(int64_t step, int rank) {
  std::string digits = std::to_string(step);
  if (digits.size() < 8) digits.insert(0, 8 - digits.size(), '0');
  return "step-" + digits + ".rank-" + std::to_string(rank) + ".ckpt";
}
// <prefix><r>.json: where rank r ran (host, addresses, local rank, device), built-in runner.
inline constexpr const char* kRankPlacePrefix = "place.rank";
// The launcher's record of how it started the attempt (command, job id, host): the orchestrator's.
inline constexpr const char* kLaunchFile = "launch.json";
inline constexpr const char* kJobScriptFile = "job.sh";  // the sbatch script (Slurm launcher)

// A warm worker's folder (orchestrator/launch/worker_pool.cc <-> runner/train/worker_loop.cc): the
// worker publishes ready.rank<r>, then waits for job-<n>.json ({"config": path}), runs it and
// publishes done-<n>.rank<r> (its exit code); the quit file ends it.
inline constexpr const char* kWorkerReadyPrefix = "ready.rank";
inline constexpr const char* kWorkerJobPrefix = "job-";
inline constexpr const char* kWorkerDonePrefix = "done-";
inline constexpr const char* kWorkerQuitFile = "quit";

// Every path of the protocol, built in one place (as LevelDB's db/filename.h does): `dir` is an
// attempt folder (or a warm worker's folder for the Worker* ones), without a trailing slash.
inline std::string AttemptDir(std::string_view runs_dir, std::string_view sweep,
                              std::string_view run_id, int attempt, std::string_view database_id) {
  std::string dir = std::string(runs_dir) + "/" + std::string(sweep) + "/" + std::string(run_id) +
                    "/attempt-" + std::to_string(attempt);
  if (!database_id.empty()) dir += "-" + std::string(database_id);
  return dir;
}
inline std::string InDir(std::string_view dir, std::string_view file) {
  return std::string(dir) + "/" + std::string(file);
}
inline std::string ConfigPath(std::string_view dir) { return InDir(dir, kConfigFile); }
inline std::string MetricsPath(std::string_view dir) { return InDir(dir, kMetricsFile); }
inline std::string StderrPath(std::string_view dir) { return InDir(dir, kStderrFile); }
inline std::string StdoutPath(std::string_view dir) { return InDir(dir, kStdoutFile); }
inline std::string StopPath(std::string_view dir) { return InDir(dir, kStopFile); }
inline std::string PruneAtPath(std::string_view dir) { return InDir(dir, kPruneAtFile); }
inline std::string PreemptPath(std::string_view dir) { return InDir(dir, kPreemptFile); }
inline std::string ResumePath(std::string_view dir) { return InDir(dir, kResumeFile); }
inline std::string BranchFromPath(std::string_view dir) { return InDir(dir, kBranchFromFile); }
inline std::string CheckpointDirPath(std::string_view dir) { return InDir(dir, kCheckpointDir); }
inline std::string CheckpointShardPath(std::string_view dir, int64_t step, int rank) {
  return InDir(CheckpointDirPath(dir), CheckpointShardName(step, rank));
}
inline std::string LaunchPath(std::string_view dir) { return InDir(dir, kLaunchFile); }
inline std::string JobScriptPath(std::string_view dir) { return InDir(dir, kJobScriptFile); }
inline std::string RankPlacePath(std::string_view dir, int rank) {
  return InDir(dir, kRankPlacePrefix + std::to_string(rank) + ".json");
}
inline std::string WorkerReadyPath(std::string_view dir, int rank) {
  return InDir(dir, kWorkerReadyPrefix + std::to_string(rank));
}
inline std::string WorkerJobPath(std::string_view dir, int n) {
  return InDir(dir, kWorkerJobPrefix + std::to_string(n) + ".json");
}
inline std::string WorkerDonePath(std::string_view dir, int n, int rank) {
  return InDir(dir, kWorkerDonePrefix + std::to_string(n) + ".rank" + std::to_string(rank));
}
inline std::string WorkerQuitPath(std::string_view dir) { return InDir(dir, kWorkerQuitFile); }

// Kinds of metrics lines.
inline constexpr const char* kLineStart = "start";
inline constexpr const char* kLineStep = "step";
inline constexpr const char* kLineEval = "eval";
inline constexpr const char* kLineEnd = "end";
inline constexpr const char* kLineResume = "resume";          // first line of a resumed attempt
inline constexpr const char* kLineCheckpoint = "checkpoint";  // a checkpoint was written

// Metric names read outside the program that writes them.
inline constexpr const char* kMetricLoss = "loss";
inline constexpr const char* kMetricTestLoss = "test_loss";
inline constexpr const char* kMetricTestAccuracy = "test_accuracy";
inline constexpr const char* kMetricStepSeconds = "step_seconds";
inline constexpr const char* kMetricCommSeconds = "comm_seconds";
inline constexpr const char* kMetricGnsSqSmall = "gns_sq_small";
inline constexpr const char* kMetricGnsSqBig = "gns_sq_big";
inline constexpr const char* kMetricGnsBSmall = "gns_b_small";
inline constexpr const char* kMetricGnsBBig = "gns_b_big";

// The signals a run answers by checkpointing and exiting kPreempted (SIGUSR2: Slurm's
// `--signal=B:USR2@N`, forwarded by mpirun; not SIGUSR1, which NCCL uses; SIGTERM: Slurm's
// cancel, preemption and time limit, and the orchestrator's stop).
inline constexpr int kPreemptSignals[] = {12 /* SIGUSR2 */, 15 /* SIGTERM */};

}  // namespace batchlab::protocol

#endif  // BATCHLAB_BASE_RUN_PROTOCOL_H_
