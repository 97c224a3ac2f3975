"""The runner <-> orchestrator protocol (docs/protocol.md) as the client spells it: outcomes and
their exit codes, the attempt folder's file names, the kinds of metrics lines, the metric names
read across folders and the signals that preempt a run.

Its home is base/run_protocol.h; tests/clients/protocol_parity_test.py parses that header and
checks that every constant here equals its C++ twin (kVersion -> VERSION, kStopFile ->
STOP_FILE, kLineResume -> LINE_RESUME, ...) and that neither side has one the other lacks.

    from batchlab import protocol
    protocol.OUTCOME_CODES["preempted"]                   # 7
    os.path.join(attempt_dir, protocol.PREEMPT_FILE)      # ".../preempt"
"""

# 2: checkpoints, the `preempted` outcome (exit 7), `resume` lines and resume.json.
VERSION = 2

# (name, exit code, final): final = the run is finished (never re-run); False: a new attempt
# resumes it.
OUTCOMES = (
    ("completed", 0, True),         # budget used up, no target was set
    ("target_reached", 3, True),    # the target was met
    ("diverged", 4, True),          # loss NaN/Inf or above divergence_factor x the first loss
    ("budget_exhausted", 5, True),  # a target was set and the budget ran out first
    ("pruned", 6, True),            # the orchestrator asked it to stop (stop or prune_at file)
    ("preempted", 7, False),        # a signal or the preempt file: checkpointed, not finished
)
OUTCOME_CODES = {name: code for name, code, _ in OUTCOMES}

# Exit codes that are not outcomes.
EXIT_FAILED = 1      # anything else: retried
EXIT_BAD_CONFIG = 2  # invalid config or missing data: never retried

# The attempt folder (`<runs-dir>/<sweep>/<run-id>/attempt-<n>-<database id>/`).
CONFIG_FILE = "config.json"        # the resolved config
METRICS_FILE = "metrics.jsonl"     # rank 0's lines
STDERR_FILE = "stderr.log"
STDOUT_FILE = "stdout.log"
STOP_FILE = "stop"                 # orchestrator: end after this step
PRUNE_AT_FILE = "prune_at"         # orchestrator: the self-stop bound
PREEMPT_FILE = "preempt"           # checkpoint at the next step and exit 7
RESUME_FILE = "resume.json"        # earlier attempts' folders, newest first
CHECKPOINT_DIR = "checkpoints"     # step-<8 digits>.rank-<r>.ckpt
RANK_PLACE_PREFIX = "place.rank"   # <prefix><r>.json: where rank r ran (built-in runner)
BRANCH_FROM_FILE = "branch_from.json"  # a branch run: its trunk's attempt folders
LAUNCH_FILE = "launch.json"        # the launcher's record of how it started the attempt
JOB_SCRIPT_FILE = "job.sh"         # the sbatch script (Slurm launcher)

# A warm worker's folder (the built-in runner's; listed for completeness).
WORKER_READY_PREFIX = "ready.rank"
WORKER_JOB_PREFIX = "job-"
WORKER_DONE_PREFIX = "done-"
WORKER_QUIT_FILE = "quit"

# Kinds of metrics lines.
LINE_START = "start"
LINE_STEP = "step"
LINE_EVAL = "eval"
LINE_END = "end"
LINE_RESUME = "resume"             # first line of a resumed attempt
LINE_CHECKPOINT = "checkpoint"     # a checkpoint was written

# Metric names read outside the program that writes them.
METRIC_LOSS = "loss"
METRIC_TEST_LOSS = "test_loss"
METRIC_TEST_ACCURACY = "test_accuracy"
METRIC_STEP_SECONDS = "step_seconds"
METRIC_COMM_SECONDS = "comm_seconds"
METRIC_GNS_SQ_SMALL = "gns_sq_small"
METRIC_GNS_SQ_BIG = "gns_sq_big"
METRIC_GNS_B_SMALL = "gns_b_small"
METRIC_GNS_B_BIG = "gns_b_big"

# The signals a run answers by checkpointing and exiting `preempted` (Linux numbers: SIGUSR2,
# Slurm's `--signal=B:USR2@N`, not SIGUSR1, which NCCL uses; SIGTERM).
PREEMPT_SIGNALS = (12, 15)


def checkpoint_file_name(step, rank):
    """rank's shard of the checkpoint after `step`: "step-00000040.rank-0.ckpt"."""
    return f"step-{step:08d}.rank-{rank}.ckpt"
