"""One rank's view of a batchlab run: sizes, the LR, the metric lines, the stop decisions and the
exit code (docs/byo-program.md, docs/protocol.md).

    run = batchlab.init()
    for step in run.steps(train_samples=len(train_set), optimizer=opt):  # sets opt's LR per step
        loss = run.backward(model, F.cross_entropy, x, y)   # or your own backward
        opt.step()
        if run.log_step(loss):              # global mean loss, decisions; True: evaluate now
            run.log_eval(test_accuracy=acc, test_loss=test_loss)   # target decision
    run.finish()                            # `end` line, exit 0/3/4/5 (6: pruned)

Checkpoints (docs/byo-program.md, "Checkpoints and preemption"): register the state to save, and
resume it on a new attempt before the loop; the client saves at the config's `checkpoint`
cadence and when preempted (SIGUSR2, SIGTERM or the `preempt` file: checkpoint, exit 7):

    run.on_checkpoint(lambda: {"model": model.state_dict(), "opt": opt.state_dict()})
    state = run.resume()                    # None on a fresh start
    if state: model.load_state_dict(state["model"]); opt.load_state_dict(state["opt"])
    epoch, index = run.data_position        # where the data continues (global batches)
    # or, for objects with state_dict()/load_state_dict(): run.resumable(model=model, opt=opt)

A batch-size schedule (config `batch_schedule`, as batchlab-runner trains it): run.steps() sets
run.batch_size / local_batch_size / micro_batch_size to each step's values before yielding it
(read them inside the loop), the LR is the one for the step's batch, every `samples` written is
the schedule's, and run.data_position (with .rows) follows the runner's sampler:

    for step in run.steps(train_samples=N, optimizer=opt):
        idx = my_rows.take(run.local_batch_size)    # this step's local batch

Every decision uses values all ranks share (shared.py), so every rank leaves the loop after the
same step. Only rank 0 writes the metrics file. A program that raises leaves no `end` line, so
batchlab records the attempt as failed.
"""

import atexit
import collections
import json
import math
import numbers
import os
import signal
import socket
import sys
import threading
import time

from . import checkpoint, protocol, sampler, shared
from .batch_schedule import BatchSchedule, data_cursor
from .batch_schedule import total_steps as schedule_total_steps
from .config import ConfigError
from .lr import LrSchedule, steps_per_epoch, total_steps
from .metrics import MetricsWriter

OUTCOME_CODES = dict(protocol.OUTCOME_CODES)
STOP_CHECK_SECONDS = 0.1  # rank 0 looks for the stop and preempt files at most this often

P = protocol
_RESERVED = frozenset(("seq", "kind", "step", "samples", "epoch", P.METRIC_LOSS, "lr", "seconds",
                       P.METRIC_STEP_SECONDS, P.METRIC_COMM_SECONDS, "cpus", "load_avg", P.METRIC_GNS_B_SMALL, P.METRIC_GNS_B_BIG,
                       P.METRIC_GNS_SQ_SMALL, P.METRIC_GNS_SQ_BIG))



class DataPosition(collections.namedtuple("DataPosition", "epoch index")):
    """Where the run's data continues: `index` global batches of epoch `epoch` (from 0) are
    trained, `rows` rows of that epoch's global order (index x batch_size for a constant batch;
    under a batch schedule the batches differ, so start the data at `rows`). The same on every
    rank and at every rank count: rank r reads its local batch at rows + r x local_batch_size
    (docs/byo-program.md). Without the training set size: epoch 0, index = the step, rows =
    all the samples so far."""

    def __new__(cls, epoch, index, rows=None):
        self = super().__new__(cls, epoch, index)
        self.rows = rows
        return self


def _metrics(metrics):
    """The program's own metrics as floats; a protocol field's name is refused."""
    out = {}
    for name, value in metrics.items():
        if name in _RESERVED:
            raise ValueError(f"batchlab: {name!r} is a field of the protocol's lines; name your "
                             "metric differently")
        out[name] = _number(name, value)
    return out


def _affinity():
    """This rank's host and the cores it may run on: {"host": ..., "cpus": [ids]} (ids None
    where the platform cannot tell, then "count" is the host's cores)."""
    try:
        return {"host": socket.gethostname(), "cpus": sorted(os.sched_getaffinity(0))}
    except (AttributeError, OSError):
        return {"host": socket.gethostname(), "cpus": None, "count": os.cpu_count() or 0}


def _host_state(ranks):
    """The cores the run's ranks on rank 0's host may run on — the union of their affinities, so
    2 ranks bound to a core each have 2, not 1 — and the host's 1-minute load average
    (docs/protocol.md): what the scaling analysis needs to compare runs that ran under the same
    conditions. `ranks`: every rank's _affinity() (rank 0's first)."""
    mine = ranks[0]
    if mine["cpus"] is None:
        cpus = mine["count"]
    else:
        union = set()
        for r in ranks:
            if r["host"] == mine["host"] and r["cpus"] is not None:
                union.update(r["cpus"])
        cpus = len(union)
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return {"cpus": cpus}
    return {"cpus": cpus, "load_avg": load}


def _number(name, value):
    """A float from a Python number or a one-element tensor (anything with .item())."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"batchlab: metric {name!r} must be a number, got {value!r}")
    return float(value)


class Run:
    """Created by batchlab.init(); see the module docstring for the loop."""

    def __init__(self, cfg, clock=time.monotonic, values=None):
        self.cfg = cfg
        self.config = cfg.raw                # the whole resolved config (model, data, ... too)
        self.params = cfg.params             # the spec's `params`, unchanged
        self.rank = cfg.rank
        self.world_size = cfg.world_size
        self.local_rank = cfg.local_rank
        self.local_world_size = cfg.local_world_size
        # The current step's sizes: global per optimizer step, per rank, per micro-batch. With a
        # batch_schedule they change between steps (run.steps() sets them before each step; a
        # program reads them every step); before the loop they are the next step's.
        self.batch_size = cfg.batch_size
        self.local_batch_size = cfg.local_batch_size
        self.micro_batch_size = cfg.micro_batch_size
        bs = cfg.batch_schedule or {}
        # The config's batch_schedule (constant without one): run.batch_size_at(step).
        self.batch_schedule = BatchSchedule(cfg.batch_size, bs.get("at_samples", ()),
                                            bs.get("batch_sizes", ()))
        self.accumulation = cfg.accumulation
        self.seed = cfg.seed
        self.is_main = cfg.rank == 0
        self.step = 0                        # the last logged step (steps count from 1)
        self.total_steps = None              # known once started; 0 = a seconds budget only
        self.steps_per_epoch = 0             # 0 = not told (run.steps(train_samples=N))
        self._clock = clock
        self._values = values                # a test's SharedValues; None = shared.for_world
        self._schedule = None                # the LR schedule at batch_size
        self._lr_by_batch = {}               # a batch schedule's other batches: their LRs
        self._train_samples = 0              # N (run.steps(train_samples=N)); 0 = not told
        self._orders = {}                    # run.batches(): epoch -> its global order
        # A branch of a branch study: where its trunk's data stood at the branch point
        # ({"seed", "epoch", "rows" (global), "at_step"}); None for any other run.
        self._origin = None
        self._writer = None
        self._start_time = None
        self._step_began = None
        self._yielded = 0
        self._initial_loss = None
        self._last_loss = None
        self._elapsed = 0.0
        self._stop = None                    # None | "diverged" | "target" | "budget" | "pruned"
        self._stop_checked = None            # when rank 0 last looked for the stop file
        self._prune_bound_passed = False     # rank 0: an evaluation passed the prune_at bound
        self._eval_due = False
        self._last_eval = None               # (step, {metric: value})
        self._target_at = None               # (step, samples, seconds)
        self._gns = None                     # this step's noise measurement (ddp.py)
        self._probe = None                   # the DDP hook's state (ddp.py)
        self._finished = False
        self._host_logged = False            # cpus / load_avg written on this attempt's 1st step
        # Checkpoints and preemption (docs/byo-program.md).
        self._checkpoint_fn = None           # on_checkpoint: () -> the program's state
        self._last_checkpoint = (0, 0, 0.0)  # (step, samples, seconds) of the last one
        self._resumed = None                 # None: resume() not called; else (step, state)
        self._resume_elapsed = 0.0           # the checkpoint's seconds (the clock goes on)
        self._rng_pending = None             # generators to restore before the next step
        self._signalled = None               # SIGUSR2/SIGTERM received inside steps()
        self._preempt_seen = False           # rank 0: the preempt file exists
        self._preempt_checked = None
        self._preempt = False                # every rank: leave after this step (exit 7)
        self._eval_calls = 0                 # log_eval calls so far (the arrival check's key)
        self.resumed_step = 0                # the step this attempt resumed from (0: none)

    # --- sizes and the learning rate -------------------------------------------------------

    def start(self, train_samples=None, optimizer=None):
        """Fixes the run's length and writes the `start` line (steps() calls it). Tell it the
        training set size when the budget or warmup is in epochs; the steps per epoch are
        floor(N / batch_size) at every world size, as the runner's sampler has."""
        if self._start_time is not None:
            return
        cfg = self.cfg
        self._check_branch_state()
        self._plan(train_samples)
        self._open_writer()
        self._start_time = self._clock() - self._resume_elapsed  # a resumed run's clock goes on
        line = {"kind": P.LINE_START, "time": time.time(), "world_size": cfg.world_size,
                "batch_size": cfg.batch_size, "local_batch_size": cfg.local_batch_size,
                "accumulation": cfg.accumulation}
        if not self.batch_schedule.constant:  # batch_size is the first; step lines the rest
            line["batch_schedule"] = {"at_samples": self.batch_schedule.at_samples,
                                      "batch_sizes": self.batch_schedule.batch_sizes}
        if optimizer is not None:
            line["parameters"] = sum(p.numel() for g in optimizer.param_groups
                                     for p in g["params"])
        line.update({"host": socket.gethostname(), "total_steps": self.total_steps,
                     "steps_per_epoch": self.steps_per_epoch, "backend": self._backend(),
                     "client": "python"})
        self._writer.write(line)

    def _open_writer(self):
        """Rank 0's metrics file (truncated, as the runner does); other ranks write nowhere but
        count the same seq."""
        if self._writer is not None:
            return
        cfg = self.cfg
        if self.is_main:
            self._writer = MetricsWriter.open(cfg.metrics_path)
            if cfg.metrics_path:
                atexit.register(self._warn_unfinished)
        else:
            self._writer = MetricsWriter(None)

    def _plan(self, train_samples=None):
        """The steps per epoch, the step budget and the LR schedule (a bad config exits 2)."""
        if self._schedule is not None and train_samples is None:
            return
        cfg = self.cfg
        sched = self.batch_schedule
        try:
            if train_samples is not None:
                self.steps_per_epoch = steps_per_epoch(int(train_samples), cfg.world_size,
                                                       cfg.local_batch_size)
                self._train_samples = int(train_samples)
                for i, batch in enumerate(sched.batch_sizes):  # as the runner's trainer
                    if batch > self._train_samples:
                        raise ConfigError(
                            f"batch_schedule.batch_sizes[{i}]: a batch of {batch} is larger "
                            f"than the {self._train_samples} training samples; use a smaller "
                            "batch size")
            if sched.constant:
                self.total_steps = total_steps(cfg.budget_steps, cfg.budget_epochs,
                                               cfg.budget_samples, cfg.batch_size,
                                               self.steps_per_epoch)
            else:
                if cfg.budget_epochs > 0 and not self._train_samples:
                    total_steps(0, cfg.budget_epochs, 0, cfg.batch_size, 0)  # its message
                self.total_steps = schedule_total_steps(
                    sched, cfg.budget_steps, cfg.budget_epochs, cfg.budget_samples,
                    self._train_samples)
            # The LR of a step is the schedule built for that step's batch (lr.rule; warmup and
            # decay over the run's steps), as runner/train/trainer.cc LrAt.
            self._schedule = LrSchedule(cfg.lr, cfg.batch_size, self.total_steps,
                                        self.steps_per_epoch)
            self._lr_by_batch = {b: LrSchedule(cfg.lr, b, self.total_steps, self.steps_per_epoch)
                                 for b in set(sched.batch_sizes) if b != cfg.batch_size}
        except ConfigError as e:
            fail_config(e, self.rank)

    def lr(self, step):
        """The LR of step `step` (counting from 1, as in the step lines): exactly the runner's
        LrSchedule::At(step - 1) for this config's rule, warmup and schedule, at that step's
        batch (batch_schedule). Before steps(), an epochs budget or warmup needs
        run.start(train_samples=N) first."""
        self._plan()
        batch = self.batch_size_at(step)
        return self._lr_by_batch.get(batch, self._schedule).at(step - 1)

    def batch_size_at(self, step):
        """The global batch of step `step` (from 1): batch_size, or under a batch_schedule the
        batch of the last switch whose at_samples the samples seen before the step reached."""
        return self.batch_schedule.at(step).batch

    def samples_after(self, step):
        """Training samples seen after step `step` (all ranks): step x batch_size, or the batch
        schedule's sum. What the lines' `samples` say."""
        return self.batch_schedule.samples_after(step)

    def _use_batch_of(self, step):
        """run.batch_size, local_batch_size, micro_batch_size: step `step`'s."""
        self.batch_size = self.batch_size_at(step)
        self.local_batch_size = self.batch_size // self.world_size
        self.micro_batch_size = self.local_batch_size // self.accumulation

    # --- the loop ----------------------------------------------------------------------------

    def steps(self, train_samples=None, optimizer=None):
        """Yields the step numbers 1, 2, ... until the budget ends, the target is reached or the
        loss diverges. With `optimizer`, sets every param group's "lr" to run.lr(step) first.
        Call log_step once in every step. Before each step run.batch_size, local_batch_size
        and micro_batch_size become that step's (they change under a batch_schedule)."""
        self.start(train_samples, optimizer)
        if self.cfg.mode == "noop":
            return
        previous = self._catch_preempt_signals()
        try:
            while self._stop is None and (self.total_steps == 0 or self.step < self.total_steps):
                step = self.step + 1
                self._yielded = step
                self._use_batch_of(step)
                if optimizer is not None:
                    lr = self.lr(step)
                    for group in optimizer.param_groups:
                        group["lr"] = lr
                if self._rng_pending is not None:  # resumed: the generators as they were
                    checkpoint.set_rng_state(self._rng_pending)
                    self._rng_pending = None
                self._step_began = self._clock()
                yield step
                if self.step < step:
                    raise RuntimeError("batchlab: call run.log_step(loss) once in every step of "
                                       "run.steps()")
                # After the step's log_step and log_eval; a run that ends here just ends.
                if self._stop is not None or (self.total_steps and step >= self.total_steps):
                    continue
                if self._preempt:  # every rank learnt it from this step's shared values
                    self._save_checkpoint()
                    self._leave_preempted()
                elif self._checkpoint_due():
                    self._save_checkpoint()
        finally:
            for signum, handler in previous:  # None: a handler not set from Python
                signal.signal(signum, signal.SIG_DFL if handler is None else handler)

    def log_step(self, loss, **metrics):
        """Ends a step: averages the loss (and the clock) over ranks, writes the `step` line on
        rank 0 with the LR and, on measured steps, the gns_* fields, then decides whether the run
        stops here (diverged, a `loss` target, the budget). Every rank must call it.
        Returns should_eval(): whether this step is to be evaluated."""
        if self._start_time is None:
            self.start()
        step = self.step + 1
        extra = _metrics(metrics)  # checked before any collective
        now = self._clock()
        local = [_number("loss", loss), now - self._start_time]
        gns = self._gns
        comm = self._probe.take_comm() if self._probe is not None else None
        if gns is None and self._probe is not None:  # the DDP hook measured this step
            taken = self._probe.take()
            if taken is not None:
                batch = self.batch_size_at(step)
                gns = {"source": "ranks", "b_small": batch // self.world_size,
                       "b_big": batch, "sq_small": taken[0], "sq_big": taken[1]}
        ranks_gns = gns is not None and gns.get("source") == "ranks"
        local.append(gns["sq_small"] if ranks_gns else 0.0)  # the same length on every rank
        local.append(1.0 if self._stop_file_seen(now) else 0.0)
        local.append(1.0 if self._signalled is not None or self._preempt_file_seen(now) else 0.0)
        first_logged = not self._host_logged
        if first_logged:  # every rank's cores, for rank 0 to read after the collective below
            shared.post(self._shared(), "affinity", json.dumps(_affinity()))
        values = self._shared().mean(local)
        loss_g, self._elapsed = values[0], values[1]
        self._preempt = values[4] > 0

        line = {"kind": P.LINE_STEP, "step": step, "samples": self.samples_after(step)}
        if self.steps_per_epoch:
            line["epoch"] = self._epoch_of(step)
        line[P.METRIC_LOSS] = loss_g
        if gns is not None:
            line[P.METRIC_GNS_B_SMALL] = gns["b_small"]
            line[P.METRIC_GNS_B_BIG] = gns["b_big"]
            line[P.METRIC_GNS_SQ_SMALL] = values[2] if ranks_gns else gns["sq_small"]
            line[P.METRIC_GNS_SQ_BIG] = gns["sq_big"]
        line["lr"] = self.lr(step)
        began = self._step_began if self._yielded == step else None
        if began is not None:
            line[P.METRIC_STEP_SECONDS] = now - began
        if comm is not None:  # rank 0's allreduce time of this step, as the runner writes it
            line[P.METRIC_COMM_SECONDS] = comm
        if first_logged:  # the conditions this run had (scaling compares like with like)
            self._host_logged = True
            if self.is_main:
                posted = shared.collect(self._shared(), "affinity")
                line.update(_host_state([json.loads(t) for t in posted] if posted
                                        else [_affinity()]))
        line.update(extra)
        self._writer.write(line)
        self._gns = None
        self.step = step
        self._last_loss = loss_g

        # The runner's order: divergence, a loss target, (evaluation), the seconds budget.
        cfg = self.cfg
        if step == 1:
            self._initial_loss = loss_g
        if not math.isfinite(loss_g) or loss_g > cfg.divergence_factor * self._initial_loss:
            self._stop = "diverged"
        elif cfg.target is not None and cfg.target.metric == P.METRIC_LOSS:
            self._record_target(loss_g, self._elapsed)
        if self._stop is None and values[3] > 0:
            self._stop = "pruned"  # the orchestrator's stop file: end now, no final evaluation
        if self._stop is None and cfg.budget_seconds > 0 and self._elapsed >= cfg.budget_seconds:
            self._stop = "budget"
        ending = self._stop is not None or (self.total_steps and step >= self.total_steps)
        every = cfg.eval_every_steps
        self._eval_due = self._stop not in ("diverged", "pruned") and bool(
            ending or (every > 0 and step % every == 0))
        return self._eval_due

    def _stop_file_seen(self, now):
        """Rank 0: whether the orchestrator asked this run to stop (docs/protocol.md, Stop)."""
        path = getattr(self.cfg, "stop_path", None)
        if not self.is_main or not path:
            return False
        if self._prune_bound_passed:
            return True
        if self._stop_checked is not None and now - self._stop_checked < STOP_CHECK_SECONDS:
            return False
        self._stop_checked = now
        return os.path.exists(path)

    def _preempt_file_seen(self, now):
        """Rank 0: whether the attempt folder has the `preempt` file (docs/protocol.md)."""
        folder = self.cfg.attempt_dir
        if not self.is_main or not folder:
            return False
        if self._preempt_seen:
            return True
        if self._preempt_checked is not None and \
                now - self._preempt_checked < STOP_CHECK_SECONDS:
            return False
        self._preempt_checked = now
        self._preempt_seen = os.path.exists(os.path.join(folder, P.PREEMPT_FILE))
        return self._preempt_seen

    def should_eval(self):
        """True after log_step when this step is evaluated: every eval.every_steps, and at the
        last step of a run that did not diverge (the runner's final evaluation)."""
        return self._eval_due

    def log_eval(self, **metrics):
        """Writes an `eval` line for the current step with rank 0's values (broadcast, so every
        rank takes the same target decision) and checks a test_accuracy/test_loss target.
        Every rank must call it. Typical metrics: test_accuracy, test_loss."""
        checked = _metrics(metrics)
        names = list(checked)
        target = self.cfg.target
        if target is not None and target.metric != P.METRIC_LOSS and \
                target.metric not in checked:
            # The same at every evaluation of every attempt: a config error (exit 2), which the
            # orchestrator does not retry. Checked before the collective: every rank leaves.
            self._fail_config(f"target.metric is {target.metric!r} but log_eval got only "
                              f"{names}; pass {target.metric}=... to run.log_eval, or set the "
                              f"spec's target.metric to a metric the program logs")
        local = [checked[n] for n in names]
        now = self._clock() - self._start_time if self._start_time is not None else 0.0
        self._eval_calls += 1
        self._all_arrive("log_eval", self._eval_calls)
        values = self._shared().from_rank0(local + [now])
        seconds = values[-1]
        shared_metrics = dict(zip(names, values[:-1]))
        line = {"kind": P.LINE_EVAL, "step": self.step, "samples": self.samples_after(self.step),
                "seconds": seconds}
        line.update(shared_metrics)
        self._writer.write(line)
        self._last_eval = (self.step, shared_metrics)
        self._eval_due = False
        target = self.cfg.target
        if target is not None and target.metric != P.METRIC_LOSS:
            self._record_target(shared_metrics[target.metric], seconds)
            if self._target_at is None:
                self._check_prune_bound()

    def _all_arrive(self, what, n):
        """Before the n-th collective of `what`: waits (comm.timeout_seconds, default 300) until
        every rank has reached the same call. A rank that never does (an evaluation on rank 0
        only) would leave the others in the collective for good: instead each waiting rank
        names the missing ranks and the run exits 2 (the program's mistake, not retried)."""
        missing = shared.arrive(self._shared(), f"{what}/{n}/{self.step}", self._comm_timeout())
        if not missing:
            return
        who = ("ranks " if len(missing) > 1 else "rank ") + ", ".join(map(str, missing))
        has = "have" if len(missing) > 1 else "has"
        self._fail_config(
            f"rank {self.rank} waits in {what} at step {self.step}; {who} {has} not called it "
            f"(within comm.timeout_seconds = {self._comm_timeout():g} s) — every rank must "
            f"call {what} at the same step: rank 0's values are logged, so the other ranks may "
            f"pass theirs or placeholders (docs/byo-program.md)")

    def _comm_timeout(self):
        comm = self.config.get("comm") if isinstance(self.config, dict) else None
        value = comm.get("timeout_seconds") if isinstance(comm, dict) else None
        return float(value) if isinstance(value, (int, float)) and value > 0 else 300.0

    def _fail_config(self, message):
        """The program's or the config's mistake, the same in every attempt: the message on
        stderr, no end line, exit 2 (docs/protocol.md: a bad config, never retried)."""
        print(f"batchlab[rank {self.rank}]: {message}", file=sys.stderr)
        if self._writer is not None:
            self._writer.close()
        self._finished = True
        self._exit(2)

    def _check_prune_bound(self):
        """Rank 0, after an evaluation that missed the target: whether its bound (step + 1)
        reached the orchestrator's `prune_at` file beside the stop file (docs/protocol.md); the
        run then stops after the next log_step, as if the stop file had appeared."""
        path = getattr(self.cfg, "stop_path", None)
        if not self.is_main or not path or self._prune_bound_passed:
            return
        try:
            with open(os.path.join(os.path.dirname(path), P.PRUNE_AT_FILE)) as f:
                bound = json.load(f)
        except (OSError, ValueError):
            return  # absent, half-written or foreign: the stop file still comes
        stop_from = bound.get("stop_from_step") if isinstance(bound, dict) else None
        if isinstance(stop_from, int) and not isinstance(stop_from, bool):
            self._prune_bound_passed = self.step + 1 >= stop_from

    def _record_target(self, value, seconds):
        if self._target_at is None and self.cfg.target.met(value):
            self._target_at = (self.step, self.samples_after(self.step), seconds)
            self._stop = self._stop or "target"

    @property
    def outcome(self):
        """completed | target_reached | diverged | budget_exhausted | pruned (as of now; a
        preempted attempt has no outcome of its own: it exits 7 from run.steps())."""
        if self._stop == "diverged":
            return "diverged"
        if self._target_at is not None:
            return "target_reached"
        if self._stop == "pruned":
            return "pruned"
        return "budget_exhausted" if self.cfg.target is not None else "completed"

    def finish(self, exit=True):
        """Writes the `end` line (rank 0) and exits with the outcome's code: 0 completed,
        3 target_reached, 4 diverged, 5 budget_exhausted, 6 pruned. With exit=False, returns
        the code.
        Call it last: when the noise hook was registered, the process ends at once (os._exit,
        after flushing stdout and stderr), without Python's exit handlers."""
        if self._start_time is None:
            self.start()
        outcome = self.outcome
        ev = self._last_eval if self._last_eval and self._last_eval[0] == self.step else None
        reached = self._target_at
        loss = self._last_loss
        self._writer.write({
            "kind": P.LINE_END, "outcome": outcome, "steps": self.step,
            "samples": self.samples_after(self.step),
            "seconds": self._clock() - self._start_time,
            "target_step": reached[0] if reached else None,
            "target_samples": reached[1] if reached else None,
            "target_seconds": reached[2] if reached else None,
            "final_loss": loss if loss is not None and math.isfinite(loss) else None,
            "final_test_loss": ev[1].get(P.METRIC_TEST_LOSS) if ev else None,
            "final_test_accuracy": ev[1].get(P.METRIC_TEST_ACCURACY) if ev else None})
        self._writer.close()
        self._finished = True
        code = OUTCOME_CODES[outcome]
        if exit:
            self._exit(code)
        return code

    def _exit(self, code):
        sys.stdout.flush()
        sys.stderr.flush()
        if self._probe is not None:
            # After a Python DDP communication hook has run, PyTorch (1.13, gloo) can
            # deadlock while the interpreter shuts down: a gloo worker thread releasing a
            # Python-owned tensor waits for the GIL that the main thread holds while it joins
            # that worker. Nothing of the run is left to write, so leave at once.
            os._exit(code)
        # A gloo process group left to the interpreter's shutdown can abort it ("terminate
        # called without an active exception", PyTorch 1.13): end it here, its threads joined.
        dist = sys.modules.get("torch.distributed")
        try:
            if dist is not None and dist.is_available() and dist.is_initialized():
                dist.destroy_process_group()
        except Exception:  # noqa: BLE001 - leaving anyway
            pass
        sys.exit(code)

    # --- checkpoints and preemption --------------------------------------------------------

    def on_checkpoint(self, fn):
        """Registers fn() -> the program's state (anything torch.save or pickle can write, e.g.
        {"model": model.state_dict(), "optimizer": opt.state_dict()}). run.steps() calls it on
        every rank after the same step — at the config's `checkpoint` cadence (after that
        step's log_step and log_eval) and when the run is preempted — and writes this rank's
        shard with the client's own state (step, seconds, seq, random generators, ...).
        Without it nothing is saved. Returns fn (so it also works as a decorator)."""
        if not callable(fn):
            raise TypeError("batchlab: run.on_checkpoint(fn) needs a function returning the "
                            "state to save")
        self._checkpoint_fn = fn
        return fn

    def resume(self, map_location=None):
        """On a new attempt of a run (resume.json in the attempt folder names the earlier
        ones): the program's state from the newest checkpoint whose every rank's shard passes
        its checks, else None (a fresh start: also the first attempt). Call it once, before
        run.steps() and after torch.distributed.init_process_group (the ranks agree on the
        checkpoint). Afterwards run.step, run.data_position and the seconds, seq, first loss,
        last evaluation and target bookkeeping are the checkpoint's, run.steps() continues with
        the next step (and its LR), and the random generators (Python's, numpy's, torch's)
        are restored just before that step. Rank 0 writes the `resume` line first, naming the
        checkpoint and every file rejected on the way (truncated, corrupt, another run's or
        config's, a newer format). `map_location`: passed to torch.load."""
        if self._resumed is not None:
            return self._resumed[1]
        if self._start_time is not None:
            raise RuntimeError("batchlab: call run.resume() before run.steps() and run.start()")
        self._resumed = (0, None)
        folder = self.cfg.attempt_dir
        earlier = checkpoint.earlier_attempts(folder) if folder else []
        if not earlier:
            return self._start_branch(map_location)
        values = self._shared()
        if self.world_size > 1 and isinstance(values, shared.LocalValues):
            raise RuntimeError("batchlab: call run.resume() after torch.distributed."
                               "init_process_group: the ranks must agree on the checkpoint")
        # Rank 0's list of candidates, broadcast: every rank tries the same ones in order.
        found = checkpoint.candidates(earlier) if self.is_main else []
        n = int(values.from_rank0([len(found)])[0])
        flat = values.from_rank0([x for c in found for x in c] if self.is_main else [0.0] * 2 * n)
        dirs = dict(earlier)
        expect = {"run_id": self.cfg.run_id, "config": self.config}
        rejected = []
        for i in range(n):
            step, attempt = int(flat[2 * i]), int(flat[2 * i + 1])
            name = P.checkpoint_file_name(step, self.rank)
            folder = os.path.join(dirs.get(attempt, ""), P.CHECKPOINT_DIR)
            path = os.path.join(folder, name)
            try:
                if attempt not in dirs:
                    raise checkpoint.Rejected(f"attempt {attempt} is not in {P.RESUME_FILE}")
                path, header, payload = checkpoint.read_shard(
                    folder, step, self.rank, self.world_size, expect, map_location)
                reason = None
            except checkpoint.Rejected as e:
                payload, reason = None, str(e)
            if values.mean([0.0 if reason is None else 1.0])[0] == 0:
                written_by = header["world_size"]
                if written_by != self.world_size:
                    self._check_resharding(step, written_by)
                self._restore(payload["client"], step, own_rng=header["rank"] == self.rank)
                self._resumed = (step, payload["user"])
                line = {"step": step, "from_attempt": attempt, "file": path,
                        "rejected": rejected}
                if written_by != self.world_size:  # elastic resume: the K that wrote it
                    line["from_world_size"] = written_by
                self._write_resume_line(line)
                return payload["user"]
            if reason is None:
                reason = "another rank's shard of it is invalid (see stderr.log)"
            print(f"batchlab[rank {self.rank}]: checkpoint {path} not used: {reason}",
                  file=sys.stderr)
            rejected.append({"file": path, "reason": reason})
        if rejected:  # nothing loads: from step 0, and the events say why
            self._write_resume_line({"step": 0, "rejected": rejected})
        return self._start_branch(map_location)

    def _check_resharding(self, step, written_by):
        """A checkpoint of `written_by` ranks read at another rank count: refused (exit 2) for
        the sync modes whose ranks keep different states (as the runner refuses them)."""
        comm = self.config.get("comm") if isinstance(self.config, dict) else None
        sync = comm.get("sync", "allreduce") if isinstance(comm, dict) else "allreduce"
        if sync in ("async_ps", "backup", "local_sgd"):
            self._fail_config(
                f"nodes: the checkpoint at step {step} was written by {written_by} ranks and "
                f"this run has {self.world_size}; comm.sync \"{sync}\" keeps a different state "
                f"on every rank that cannot be re-sharded: resume at nodes = {written_by}")

    def _start_branch(self, map_location=None):
        """A branch of a branch study (config `branch`) that has no checkpoint of its own: every
        rank reads its shard of the trunk's checkpoint at branch.at_step from the trunk's
        attempt folders in branch_from.json (the first that holds a valid one; checked: the
        trunk's run id, step, checksum, not the config hash: a branch's config differs by
        design). The branch may run at another rank count than the trunk (its own `nodes`):
        rank r' reads the trunk's rank r' or r' mod K shard, as resume() does. The program gets
        the trunk's state; the data continue at the trunk's global data position (the rows the
        trunk had not read this epoch, re-dealt under another seed than the trunk's), and with
        the trunk's seed its random generators go on (a rank the trunk had not: a fresh stream).
        The branch's own counters start at 0. None usable on some rank: exit 1, each file
        tried and why on stderr (docs/protocol.md, "Branch runs")."""
        br = self.cfg.branch
        if br is None or self.cfg.mode != "train" or not self.cfg.attempt_dir:
            return None
        values = self._shared()
        if self.world_size > 1 and isinstance(values, shared.LocalValues):
            raise RuntimeError("batchlab: call run.resume() after torch.distributed."
                               "init_process_group: the ranks must agree on the checkpoint")
        dirs, tried = checkpoint.trunk_dirs(self.cfg.attempt_dir)
        name = P.checkpoint_file_name(br.at_step, self.rank)
        expect = {"run_id": br.trunk_run_id, "config": None}
        found = None
        for folder in dirs:
            path = os.path.join(folder, P.CHECKPOINT_DIR, name)
            zero = os.path.join(folder, P.CHECKPOINT_DIR, P.checkpoint_file_name(br.at_step, 0))
            if not os.path.exists(path) and not os.path.exists(zero):
                tried.append(f"{path}: no such file")
                continue
            try:
                path, header, payload = checkpoint.read_shard(
                    os.path.dirname(path), br.at_step, self.rank, self.world_size, expect,
                    map_location)
                if "data_cursor" not in payload["client"]:
                    raise checkpoint.Rejected("written by an older batchlab client (no data "
                                              "cursor); run the trunk again")
                found = (path, payload, header)
                break
            except checkpoint.Rejected as e:
                tried.append(f"{path}: {e}")
        if values.mean([0.0 if found else 1.0])[0] != 0:
            if found:
                tried.append(f"{found[0]}: loads, but another rank's shard does not "
                             "(see its message)")
            print(f"batchlab[rank {self.rank}]: branch: no usable checkpoint of trunk run "
                  f"{br.trunk_run_id} at step {br.at_step} for rank {self.rank}"
                  + "".join(f"\n  {t}" for t in tried), file=sys.stderr)
            self._finished = True
            self._exit(1)
        path, payload, header = found
        client = payload["client"]
        trunk_seed = client.get("seed")
        epoch, rows = client["data_cursor"]  # global (format 1: of one rank, the same)
        self._origin = {"seed": trunk_seed, "epoch": epoch, "rows": rows,
                        "at_step": br.at_step}
        if trunk_seed == self.seed:  # the trunk's generators go on (a new rank: its own)
            self._rng_pending = client["rng"] if header["rank"] == self.rank else \
                checkpoint.fresh_rng(self.seed, self.rank, br.at_step)
        self._resumed = (0, payload["user"])
        if self.is_main:
            at = "" if header["world_size"] == self.world_size else \
                f", written by {header['world_size']} ranks, read by {self.world_size}"
            print(f"batchlab: branch of trunk run {br.trunk_run_id} at its step {br.at_step} "
                  f"(from {path}{at}; data epoch {epoch}, row {rows})", file=sys.stderr)
        return payload["user"]

    def _check_branch_state(self):
        """Refusals before the first step (exit 2, naming what to add): a branch study's trunk
        (checkpoint.at_steps) must save the state its branches start from; a branch must load
        it."""
        cfg = self.cfg
        if cfg.mode != "train":
            return
        if cfg.branch is not None and self._resumed is None:
            fail_config(ConfigError(
                f"branch: this run starts from trunk run {cfg.branch.trunk_run_id}'s checkpoint "
                f"at step {cfg.branch.at_step}, but the program loaded none; call "
                "run.resumable(model=model, optimizer=optimizer) (or run.resume()) before "
                "run.steps()"), self.rank)
        if cfg.checkpoint.at_steps and self._checkpoint_fn is None:
            fail_config(ConfigError(
                f"checkpoint.at_steps: this run must keep checkpoints after steps "
                f"{sorted(cfg.checkpoint.at_steps)} (the trunk of a branch study: its branches "
                "start from them), but the program registered no state; call "
                "run.resumable(model=model, optimizer=optimizer) (or run.on_checkpoint(fn)) "
                "before run.steps()"), self.rank)

    def resumable(self, **objects):
        """Checkpoints for objects with state_dict()/load_state_dict() (models, optimizers,
        LR schedulers, GradScalers): registers on_checkpoint for {name: obj.state_dict()} and,
        on a new attempt, loads each from the checkpoint resume() finds. Returns the step
        resumed from (0: a fresh start). Same rules as resume()."""
        for name, obj in objects.items():
            if not (hasattr(obj, "state_dict") and hasattr(obj, "load_state_dict")):
                raise TypeError(f"batchlab: run.resumable({name}=...) needs an object with "
                                f"state_dict() and load_state_dict(), got {type(obj).__name__}")
        self.on_checkpoint(lambda: {name: obj.state_dict() for name, obj in objects.items()})
        state = self.resume()
        if state is None:
            return 0
        missing = [name for name in objects if name not in state]
        if missing or not isinstance(state, dict):
            which = (f"trunk run {self.cfg.branch.trunk_run_id}'s checkpoint at step "
                     f"{self.cfg.branch.at_step}" if self._origin is not None and not self.step
                     else f"the checkpoint at step {self.step}")
            raise RuntimeError(f"batchlab: {which} has no state for {missing}; the program's "
                               "resumable() names changed")
        for name, obj in objects.items():
            try:
                obj.load_state_dict(state[name])
            except (RuntimeError, ValueError, KeyError) as e:
                if self._origin is None or self.step:
                    raise
                fail_config(ConfigError(  # a branch: the trunk's model or optimizer differs
                    f"branch: trunk run {self.cfg.branch.trunk_run_id}'s checkpoint does not fit "
                    f"this run's {name} ({type(e).__name__}: {str(e).splitlines()[0]}); a branch "
                    "keeps the trunk's model and optimizer"), self.rank)
        return self.step

    @property
    def data_position(self):
        """DataPosition(epoch, index) (and .rows): the global batches already trained — epoch
        `epoch` (from 0) and `index` batches (`rows` rows of the epoch's global order) into it,
        from run.step and the steps per epoch (known once run.steps(train_samples=N) started,
        or from the checkpoint resume() loaded; without them: epoch 0, index = run.step). The
        same on every rank and at every world size (sampler.py): after resume() — at the
        checkpoint's rank count or another — rank r continues at row rows + r x
        local_batch_size of the epoch's order, bit for bit the rows of the uninterrupted run.
        Under a batch_schedule the batches differ in size: the runner's sampler takes each
        step's global batch from the rows of the epoch left, and a step whose batch no longer
        fits starts the next epoch (reshuffled); start at `rows` rows into `epoch`."""
        return self._position_after(self.step)

    def _position_after(self, steps):
        """data_position after `steps` steps: where step steps + 1 takes its global batch."""
        sched = self.batch_schedule
        o = self._origin
        n = self._train_samples
        if o is None and (sched.constant or not n):
            if not self.steps_per_epoch:
                return DataPosition(0, steps, self.samples_after(steps))
            epoch, index = divmod(steps, self.steps_per_epoch)
            return DataPosition(epoch, index, index * self.cfg.batch_size)
        start = (o["epoch"], o["rows"]) if o is not None else (0, 0)
        # In global rows: one "rank" reading the whole batch from an epoch of N rows.
        epoch, index, rows = data_cursor(sched, 1, n, steps, *start)
        if n and rows + self.batch_size_at(steps + 1) > n:
            return DataPosition(epoch + 1, 0, 0)  # the next step starts the next epoch
        return DataPosition(epoch, index, rows)

    def _epoch_of(self, step):
        """The epoch step `step` read its batch from (the step line's `epoch`)."""
        if self._origin is not None:
            return self._position_after(step - 1).epoch
        if self.batch_schedule.constant or not self._train_samples:
            return (step - 1) // self.steps_per_epoch
        return data_cursor(self.batch_schedule, 1, self._train_samples, step)[0]

    def batches(self, train_samples=None):
        """This rank's row indices (a list of ints into the training set) for every step, one
        list per next(): the step in progress's local batch (run.local_batch_size rows, so it
        follows a batch_schedule), from where run.data_position stands — after run.resume(), a
        branch start included, the rows the uninterrupted run reads. Every epoch the rows are
        reshuffled by the run's seed (sampler.py). Call run.steps(train_samples=N) with the
        same N; next() it once per step, inside the loop:

            rows = run.batches(len(train_set))
            for step in run.steps(len(train_set), opt):
                idx = torch.tensor(next(rows))
        """
        if train_samples is not None and self._train_samples and \
                int(train_samples) != self._train_samples:
            raise ValueError(f"batchlab: run.batches({train_samples}) but run.steps() was told "
                             f"{self._train_samples} training samples; pass the same N")
        while True:
            if train_samples is not None and not self._train_samples:
                self._plan(train_samples)
            if not self._train_samples:
                raise ValueError("batchlab: run.batches() needs the training set's size: "
                                 "run.batches(train_samples=N)")
            yield self.rows_of(self._yielded if self._yielded > self.step else self.step + 1)

    def rows_of(self, step):
        """The row indices this rank reads in step `step` (from 1): its part of the step's
        global batch (sampler.py); see batches()."""
        at = self._position_after(step - 1)
        local = self.batch_size_at(step) // self.world_size
        return sampler.rank_part(self._epoch_order(at.epoch), at.rows, local, self.rank)

    def _epoch_order(self, epoch):
        """The global order of `epoch`'s rows (a branch: its trunk's in the epoch of the branch
        point, the unread ones re-dealt under another seed)."""
        if epoch not in self._orders:
            o, n = self._origin, self._train_samples
            if o is not None and epoch <= o["epoch"]:
                order = sampler.epoch_order(n, o["seed"], epoch)
                if epoch == o["epoch"] and o["seed"] != self.seed:
                    order = order[:o["rows"]] + sampler.redeal(order[o["rows"]:], self.seed,
                                                               o["at_step"])
            else:
                order = sampler.epoch_order(n, self.seed, epoch)
            self._orders = {e: v for e, v in self._orders.items() if e >= epoch - 1}
            self._orders[epoch] = order
        return self._orders[epoch]

    @property
    def preempted(self):
        """True once every rank knows the run is preempted (after this step's log_step): the
        client saves a checkpoint after the step and exits 7."""
        return self._preempt

    def _write_resume_line(self, fields):
        self._open_writer()
        self._writer.write(dict({"kind": P.LINE_RESUME}, **fields))

    def _restore(self, client, step, own_rng=True):
        """The client's state of a checkpoint (see _client_state). `own_rng`: the shard is this
        rank's, so are its generators; else (a rank the K-rank checkpoint had not) the
        generators start a stream of their own (checkpoint.fresh_rng)."""
        self.step = step
        self.resumed_step = step
        self._elapsed = self._resume_elapsed = client["elapsed"]
        self._initial_loss = client["initial_loss"]
        self._last_loss = client["last_loss"]
        last_eval = client["last_eval"]
        self._last_eval = (last_eval[0], dict(last_eval[1])) if last_eval else None
        self._target_at = tuple(client["target_at"]) if client["target_at"] else None
        self._prune_bound_passed = client["prune_bound_passed"]
        if client["steps_per_epoch"] and not self.steps_per_epoch:
            self.steps_per_epoch = client["steps_per_epoch"]
        if client.get("train_samples") and not self._train_samples:
            self._train_samples = client["train_samples"]
        self._origin = client.get("data_origin")
        self._last_checkpoint = (step, self.samples_after(step), client["elapsed"])
        self._use_batch_of(step + 1)  # the sizes of the step the run continues with
        self._rng_pending = client["rng"] if own_rng else \
            checkpoint.fresh_rng(self.seed, self.rank, step)
        self._open_writer()
        self._writer.next_seq = client["next_seq"]

    def _client_state(self):
        """What the next step depends on besides the program's own state. The LR and the batch
        are functions of the step; the data position follows from the step, steps_per_epoch
        and train_samples (the same at every rank count)."""
        position = self._position_after(self.step)
        return {"step": self.step, "elapsed": self._elapsed,
                # The resumed attempt's first line takes the seq after this checkpoint's line.
                "next_seq": self._writer.next_seq + 1,
                "initial_loss": self._initial_loss, "last_loss": self._last_loss,
                "last_eval": list(self._last_eval) if self._last_eval else None,
                "target_at": list(self._target_at) if self._target_at else None,
                "prune_bound_passed": self._prune_bound_passed,
                "steps_per_epoch": self.steps_per_epoch, "total_steps": self.total_steps,
                "train_samples": self._train_samples,
                # A branch starts from these: the seed and where the data stand (global rows).
                "seed": self.seed, "data_cursor": [position.epoch, position.rows],
                "data_origin": self._origin,
                "rng": checkpoint.rng_state()}

    def _checkpoint_due(self):
        """The config's cadence, from values every rank shares (the step, the shared seconds)."""
        c = self.cfg.checkpoint
        if self._checkpoint_fn is None or not self.cfg.attempt_dir:
            return False
        step, samples, seconds = self._last_checkpoint
        return (self.step in c.at_steps
                or (c.every_steps > 0 and self.step - step >= c.every_steps)
                or (c.every_samples > 0 and
                    self.samples_after(self.step) - samples >= c.every_samples)
                or (c.every_seconds > 0 and self._elapsed - seconds >= c.every_seconds))

    def _save_checkpoint(self):
        """This rank's shard after the current step; a write that fails (a full disk) leaves
        the previous checkpoints as they were, and the run goes on."""
        if self._checkpoint_fn is None or not self.cfg.attempt_dir:
            return
        began = time.monotonic()
        state = self._checkpoint_fn()
        serializer, data = checkpoint.serialize({"client": self._client_state(), "user": state})
        folder = os.path.join(self.cfg.attempt_dir, P.CHECKPOINT_DIR)
        path = os.path.join(folder, P.checkpoint_file_name(self.step, self.rank))
        header = {"run_id": self.cfg.run_id, "config_hash": checkpoint.config_hash(self.config),
                  "step": self.step, "rank": self.rank, "world_size": self.world_size,
                  "serializer": serializer}
        written, error = 0, None
        try:
            os.makedirs(folder, exist_ok=True)
            written = checkpoint.write_file(path, header, data)
        except OSError as e:
            error = f"{path}: {e.strerror or e}"
            print(f"batchlab[rank {self.rank}]: checkpoint at step {self.step} not written "
                  f"({error}); the previous one stays valid", file=sys.stderr)
        self._last_checkpoint = (self.step, self.samples_after(self.step), self._elapsed)
        if error is None:
            checkpoint.prune(folder, self.rank, self.cfg.checkpoint.keep,
                             self.cfg.checkpoint.at_steps)
        line = {"kind": P.LINE_CHECKPOINT, "step": self.step,
                "checkpoint_seconds": time.monotonic() - began, "checkpoint_bytes": written,
                "checkpoint_time": time.time()}
        if error is not None:
            line["error"] = error
        self._writer.write(line)

    def _leave_preempted(self):
        """Preempted: the checkpoint is written; no end line, exit 7 (a new attempt resumes)."""
        self._writer.close()
        self._finished = True
        why = (f"signal {signal.Signals(self._signalled).name}" if self._signalled is not None
               else "a signal or the preempt file")
        saved = "checkpoint written" if self._checkpoint_fn is not None and \
            self.cfg.attempt_dir else "nothing to checkpoint (no run.on_checkpoint)"
        print(f"batchlab[rank {self.rank}]: preempted after step {self.step} ({why}; {saved}); "
              f"exit {OUTCOME_CODES['preempted']}", file=sys.stderr)
        self._exit(OUTCOME_CODES["preempted"])

    def _catch_preempt_signals(self):
        """Inside run.steps(): SIGUSR2 and SIGTERM only set a flag, which log_step shares.
        Returns the handlers to put back (none outside the main thread, where Python cannot
        set handlers)."""
        if threading.current_thread() is not threading.main_thread():
            return []

        def flag(signum, _frame):
            self._signalled = signum

        previous = []
        for signum in P.PREEMPT_SIGNALS:
            previous.append((signum, signal.signal(signum, flag)))
        return previous

    # --- PyTorch helpers (import torch only when called) -------------------------------------

    def backward(self, model, loss_fn, x, y):
        """loss_fn(model(x), y) and its backward over this rank's local batch, in
        `accumulation` micro-batches (DDP synchronizes only the last), measuring the gradient
        noise on measured steps: across ranks through the DDP hook, on one rank through the
        micro-batches (two half-batches without accumulation; the same update). Returns the
        local mean loss (a detached tensor)."""
        from . import ddp
        return ddp.backward(self, model, loss_fn, x, y)

    def watch(self, model):
        """Registers the gradient-noise DDP communication hook on `model` (a
        DistributedDataParallel); backward() does this itself. For your own backward loop."""
        from . import ddp
        ddp.watch(self, model)

    def log_noise(self, b_small, sq_small, sq_big):
        """This step's gradient-noise measurement from a program's own gradients (no torch
        needed), on one rank: the mean squared norm `sq_small` of gradients at batch `b_small`
        and the squared norm `sq_big` of their mean at this step's batch, both at the step's
        parameters (the "micro" source of docs/methods.md §1). Call it on measured steps
        (run.measuring), before log_step, which writes it into the step line."""
        batch = self.batch_size_at(self.step + 1)
        if self.world_size != 1 or not 0 < b_small < batch:
            raise ValueError(f"batchlab: run.log_noise needs one rank and 0 < b_small < the "
                             f"batch {batch}; got b_small {b_small} on {self.world_size} ranks")
        self._gns = {"source": "micro", "b_small": b_small, "b_big": batch,
                     "sq_small": _number("sq_small", sq_small),
                     "sq_big": _number("sq_big", sq_big)}

    @property
    def measuring(self):
        """Whether the step in progress measures the gradient noise (every gns.every_steps)."""
        return self._measuring()

    # --- internals ---------------------------------------------------------------------------

    def _measuring(self):
        """Whether the step in progress measures the gradient noise (gns.every_steps)."""
        every = self.cfg.gns_every_steps
        return every > 0 and (self.step + 1) % every == 0

    def _shared(self):
        return self._values if self._values is not None else shared.for_world(self.world_size)

    def _backend(self):
        torch = sys.modules.get("torch")
        if torch is not None and torch.distributed.is_available() and \
                torch.distributed.is_initialized():
            return str(torch.distributed.get_backend())
        return "none"

    def _warn_unfinished(self):
        if not self._finished and sys.exc_info()[0] is None:
            print(f"batchlab[rank {self.rank}]: the program ended without run.finish(); the "
                  "attempt has no end line and counts as failed", file=sys.stderr)


def fail_config(error, rank):
    """A bad config: the message on stderr, exit 2 (docs/protocol.md)."""
    print(f"batchlab[rank {rank}]: {error}", file=sys.stderr)
    sys.exit(2)
