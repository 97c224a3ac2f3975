"""batchlab: run your own training program as part of a batchlab study.

    import batchlab
    run = batchlab.init()          # the resolved config batchlab passed to this rank
    run.batch_size, run.local_batch_size, run.params, run.lr(step)   # batch sizes: this step's
    for step in run.steps(train_samples=N, optimizer=opt): ...; run.log_step(loss)
    run.finish()                   # the end line and the protocol's exit code

Checkpoints (a new attempt goes on from the last one; SIGUSR2/SIGTERM/the preempt file:
checkpoint and exit 7): run.resumable(model=model, optimizer=opt), or run.on_checkpoint(fn) and
state = run.resume(); start the data at run.data_position.

Standard library only; the PyTorch helpers (Run.backward, Run.watch, batchlab.ddp) import torch
when used. Guide: docs/byo-program.md.
"""

import os
import sys

from .batch_schedule import BatchSchedule
from .config import ConfigError, Launch, RunConfig, config_path
from .lr import LrSchedule
from . import protocol
from .run import OUTCOME_CODES, DataPosition, Run, fail_config

__all__ = ["init", "Run", "RunConfig", "ConfigError", "LrSchedule", "BatchSchedule",
           "OUTCOME_CODES", "DataPosition", "protocol"]
__version__ = "0.1.0"


def _end_with_launcher(environ):
    """SIGTERM to this rank when its parent (mpirun, batchlab-rank) dies, in a batchlab job (the
    launcher's BATCHLAB_ATTEMPT_DIR tag): a rank never trains on unwatched after its orchestrator
    was killed (base/launched_process.h does the same for the C++ runner)."""
    if "BATCHLAB_ATTEMPT_DIR" not in environ or not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        import signal
        parent = os.getppid()
        ctypes.CDLL(None).prctl(1, int(signal.SIGTERM), 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() != parent or parent == 1:
            os.kill(os.getpid(), signal.SIGTERM)
    except (OSError, AttributeError):
        pass


def init(args=None, argv=None, environ=None):
    """Reads the run config (the `--config F` argument, else the BATCHLAB_CONFIG variable) and
    this rank's place in the job (RANK, WORLD_SIZE, LOCAL_RANK, ... or OpenMPI's / Slurm's
    variables); returns a Run.

    `--config F` is removed from sys.argv, so the program's own argument parser never sees it.
    With `--validate` the config is checked and the program exits 0 (valid) or 2 (the message
    names the field). A bad config exits 2 on every rank before anything is written.
    `args`: an argparse.Namespace; each top-level key of the spec's `params` is set on it
    (dashes as underscores), so swept params override the program's own flags.
    """
    in_sys_argv = argv is None
    argv = list(sys.argv if argv is None else argv)
    environ = os.environ if environ is None else environ
    _end_with_launcher(environ)
    rank = 0
    try:
        launch = Launch.from_env(environ)
        rank = launch.rank
        path, rest, validate = config_path(argv, environ)
        cfg = RunConfig.load(path, launch=launch if not validate else None)
        if validate:
            _validate(cfg)
            sys.exit(0)
    except ConfigError as e:
        fail_config(e, rank)
    if in_sys_argv:
        sys.argv[:] = rest
    if args is not None:
        for key, value in cfg.params.items():
            setattr(args, key.replace("-", "_"), value)
    return Run(cfg)


def _validate(cfg):
    """The checks a config can pass without the dataset (as `batchlab-runner --validate`)."""
    from .batch_schedule import BatchSchedule, total_steps as schedule_total_steps
    from .lr import total_steps
    bs = cfg.batch_schedule
    if bs is None:
        total = total_steps(cfg.budget_steps, 0, cfg.budget_samples, cfg.batch_size, 0)
    else:
        schedule = BatchSchedule(cfg.batch_size, bs["at_samples"], bs["batch_sizes"])
        total = schedule_total_steps(schedule, cfg.budget_steps, 0, cfg.budget_samples)
    if cfg.budget_epochs > 0 and total == 0:
        total = 1 << 62  # unknown until the program knows its dataset
    lr = dict(cfg.lr)
    if lr.get("warmup_epochs"):  # its length in steps needs the dataset; checked at the start
        LrSchedule(lr, cfg.batch_size, 1 << 62, steps_per_epoch=1)
        lr["warmup_epochs"] = 0
    LrSchedule(lr, cfg.batch_size, total)
