"""One rank's view of a batchlab run: sizes, the LR, the metric lines, the stop decisions and the
exit code (docs/byo-program.md, docs/protocol.md).

    run = batchlab.init()
    for step in run.steps(train_samples=len(train_set), optimizer=opt):  # sets opt's LR per step
        loss = run.backward(model, F.cross_entropy, x, y)   # or your own backward
        opt.step()
        if run.log_step(loss):              # global mean loss, decisions; True: evaluate now
            run.log_eval(test_accuracy=acc, test_loss=test_loss)   # target decision
    run.finish()                            # `end` line, exit 0/3/4/5 (6: pruned)

Every decision uses values all ranks share (shared.py), so every rank leaves the loop after the
same step. Only rank 0 writes the metrics file. A program that raises leaves no `end` line, so
batchlab records the attempt as failed.
"""

import atexit
import json
import math
import numbers
import os
import socket
import sys
import time

from . import shared
from .config import ConfigError
from .lr import LrSchedule, steps_per_epoch, total_steps
from .metrics import MetricsWriter

OUTCOME_CODES = {"completed": 0, "target_reached": 3, "diverged": 4, "budget_exhausted": 5,
                 "pruned": 6}
STOP_CHECK_SECONDS = 0.1  # rank 0 looks for the orchestrator's stop file at most this often


_RESERVED = frozenset(("seq", "kind", "step", "samples", "epoch", "loss", "lr", "seconds",
                       "step_seconds", "gns_b_small", "gns_b_big", "gns_sq_small", "gns_sq_big"))


def _metrics(metrics):
    """The program's own metrics as floats; a protocol field's name is refused."""
    out = {}
    for name, value in metrics.items():
        if name in _RESERVED:
            raise ValueError(f"batchlab: {name!r} is a field of the protocol's lines; name your "
                             "metric differently")
        out[name] = _number(name, value)
    return out


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
        self.batch_size = cfg.batch_size     # global, per optimizer step
        self.local_batch_size = cfg.local_batch_size
        self.micro_batch_size = cfg.micro_batch_size
        self.accumulation = cfg.accumulation
        self.seed = cfg.seed
        self.is_main = cfg.rank == 0
        self.step = 0                        # the last logged step (steps count from 1)
        self.total_steps = None              # known once started; 0 = a seconds budget only
        self.steps_per_epoch = 0             # 0 = not told (run.steps(train_samples=N))
        self._clock = clock
        self._values = values                # a test's SharedValues; None = shared.for_world
        self._schedule = None
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

    # --- sizes and the learning rate -------------------------------------------------------

    def start(self, train_samples=None, optimizer=None):
        """Fixes the run's length and writes the `start` line (steps() calls it). Tell it the
        training set size when the budget or warmup is in epochs; the steps per epoch are
        floor(floor(N / world_size) / local_batch_size), as the runner's sampler has."""
        if self._start_time is not None:
            return
        cfg = self.cfg
        self._plan(train_samples)
        if self.is_main:
            self._writer = MetricsWriter.open(cfg.metrics_path)
            if cfg.metrics_path:
                atexit.register(self._warn_unfinished)
        else:
            self._writer = MetricsWriter(None)
        self._start_time = self._clock()
        line = {"kind": "start", "time": time.time(), "world_size": cfg.world_size,
                "batch_size": cfg.batch_size, "local_batch_size": cfg.local_batch_size,
                "accumulation": cfg.accumulation}
        if optimizer is not None:
            line["parameters"] = sum(p.numel() for g in optimizer.param_groups
                                     for p in g["params"])
        line.update({"host": socket.gethostname(), "total_steps": self.total_steps,
                     "steps_per_epoch": self.steps_per_epoch, "backend": self._backend(),
                     "client": "python"})
        self._writer.write(line)

    def _plan(self, train_samples=None):
        """The steps per epoch, the step budget and the LR schedule (a bad config exits 2)."""
        if self._schedule is not None and train_samples is None:
            return
        cfg = self.cfg
        try:
            if train_samples is not None:
                self.steps_per_epoch = steps_per_epoch(int(train_samples), cfg.world_size,
                                                       cfg.local_batch_size)
            self.total_steps = total_steps(cfg.budget_steps, cfg.budget_epochs,
                                           cfg.budget_samples, cfg.batch_size,
                                           self.steps_per_epoch)
            self._schedule = LrSchedule(cfg.lr, cfg.batch_size, self.total_steps,
                                        self.steps_per_epoch)
        except ConfigError as e:
            fail_config(e, self.rank)

    def lr(self, step):
        """The LR of step `step` (counting from 1, as in the step lines): exactly the runner's
        LrSchedule::At(step - 1) for this config's rule, warmup and schedule. Before steps(),
        an epochs budget or warmup needs run.start(train_samples=N) first."""
        self._plan()
        return self._schedule.at(step - 1)

    # --- the loop ----------------------------------------------------------------------------

    def steps(self, train_samples=None, optimizer=None):
        """Yields the step numbers 1, 2, ... until the budget ends, the target is reached or the
        loss diverges. With `optimizer`, sets every param group's "lr" to run.lr(step) first.
        Call log_step once in every step."""
        self.start(train_samples, optimizer)
        if self.cfg.mode == "noop":
            return
        while self._stop is None and (self.total_steps == 0 or self.step < self.total_steps):
            step = self.step + 1
            self._yielded = step
            if optimizer is not None:
                lr = self.lr(step)
                for group in optimizer.param_groups:
                    group["lr"] = lr
            self._step_began = self._clock()
            yield step
            if self.step < step:
                raise RuntimeError("batchlab: call run.log_step(loss) once in every step of "
                                   "run.steps()")

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
        if gns is None and self._probe is not None:  # the DDP hook measured this step
            taken = self._probe.take()
            if taken is not None:
                gns = {"source": "ranks", "b_small": self.local_batch_size,
                       "b_big": self.batch_size, "sq_small": taken[0], "sq_big": taken[1]}
        ranks_gns = gns is not None and gns.get("source") == "ranks"
        local.append(gns["sq_small"] if ranks_gns else 0.0)  # the same length on every rank
        local.append(1.0 if self._stop_file_seen(now) else 0.0)
        values = self._shared().mean(local)
        loss_g, self._elapsed = values[0], values[1]

        line = {"kind": "step", "step": step, "samples": step * self.batch_size}
        if self.steps_per_epoch:
            line["epoch"] = (step - 1) // self.steps_per_epoch
        line["loss"] = loss_g
        if gns is not None:
            line["gns_b_small"] = gns["b_small"]
            line["gns_b_big"] = gns["b_big"]
            line["gns_sq_small"] = values[2] if ranks_gns else gns["sq_small"]
            line["gns_sq_big"] = gns["sq_big"]
        line["lr"] = self.lr(step)
        began = self._step_began if self._yielded == step else None
        if began is not None:
            line["step_seconds"] = now - began
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
        elif cfg.target is not None and cfg.target.metric == "loss":
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
        local = [checked[n] for n in names]
        now = self._clock() - self._start_time if self._start_time is not None else 0.0
        values = self._shared().from_rank0(local + [now])
        seconds = values[-1]
        shared_metrics = dict(zip(names, values[:-1]))
        line = {"kind": "eval", "step": self.step, "samples": self.step * self.batch_size,
                "seconds": seconds}
        line.update(shared_metrics)
        self._writer.write(line)
        self._last_eval = (self.step, shared_metrics)
        self._eval_due = False
        target = self.cfg.target
        if target is not None and target.metric != "loss":
            if target.metric not in shared_metrics:
                raise ValueError(f"batchlab: target.metric is {target.metric!r} but log_eval got "
                                 f"only {names}; pass {target.metric}=...")
            self._record_target(shared_metrics[target.metric], seconds)
            if self._target_at is None:
                self._check_prune_bound()

    def _check_prune_bound(self):
        """Rank 0, after an evaluation that missed the target: whether its bound (step + 1)
        reached the orchestrator's `prune_at` file beside the stop file (docs/protocol.md); the
        run then stops after the next log_step, as if the stop file had appeared."""
        path = getattr(self.cfg, "stop_path", None)
        if not self.is_main or not path or self._prune_bound_passed:
            return
        try:
            with open(os.path.join(os.path.dirname(path), "prune_at")) as f:
                bound = json.load(f)
        except (OSError, ValueError):
            return  # absent, half-written or foreign: the stop file still comes
        stop_from = bound.get("stop_from_step") if isinstance(bound, dict) else None
        if isinstance(stop_from, int) and not isinstance(stop_from, bool):
            self._prune_bound_passed = self.step + 1 >= stop_from

    def _record_target(self, value, seconds):
        if self._target_at is None and self.cfg.target.met(value):
            self._target_at = (self.step, self.step * self.batch_size, seconds)
            self._stop = self._stop or "target"

    @property
    def outcome(self):
        """completed | target_reached | diverged | budget_exhausted | pruned (as of now)."""
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
            "kind": "end", "outcome": outcome, "steps": self.step,
            "samples": self.step * self.batch_size,
            "seconds": self._clock() - self._start_time,
            "target_step": reached[0] if reached else None,
            "target_samples": reached[1] if reached else None,
            "target_seconds": reached[2] if reached else None,
            "final_loss": loss if loss is not None and math.isfinite(loss) else None,
            "final_test_loss": ev[1].get("test_loss") if ev else None,
            "final_test_accuracy": ev[1].get("test_accuracy") if ev else None})
        self._writer.close()
        self._finished = True
        code = OUTCOME_CODES[outcome]
        if exit:
            sys.stdout.flush()
            sys.stderr.flush()
            if self._probe is not None:
                # After a Python DDP communication hook has run, PyTorch (1.13, gloo) can
                # deadlock while the interpreter shuts down: a gloo worker thread releasing a
                # Python-owned tensor waits for the GIL that the main thread holds while it joins
                # that worker. Nothing of the run is left to write, so leave at once.
                os._exit(code)
            sys.exit(code)
        return code

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
