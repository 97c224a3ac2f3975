"""The learning rate at every step and the run's length, computed exactly as batchlab-runner does
(base/lr_schedule.cc, runner/train/trainer.cc; the same floating-point operations in the same order,
so the values agree to the last bit: tests/clients/lr_parity_test.py).

    s = LrSchedule(cfg.lr, global_batch=4096, total_steps=1000, steps_per_epoch=50)
    s.at(0)          # the LR of the first step (steps count from 0 here, as in LrSchedule::At)
    s.scaled         # the peak LR after the rule

Rules: none (base), linear (base * B / B0; Goyal et al. 2017), sqrt (base * sqrt(B / B0);
Krizhevsky 2014, Hoffer et al. 2017). Gradual warmup from base (or, with warmup_start_fraction,
from that fraction of the scaled LR) to the scaled LR over warmup_steps (or
round(warmup_epochs * steps_per_epoch)). Schedules: constant; step (gamma at
each milestone step); cosine and poly (from the scaled LR to scaled * final_lr_fraction at the
last step).
"""

import bisect
import json
import math

from .config import ConfigError

_PI = 3.14159265358979323846


def llround(x):
    """std::llround: the nearest integer, halves away from zero."""
    f = math.floor(abs(x))
    n = int(f) + (1 if abs(x) - f >= 0.5 else 0)
    return n if x >= 0 else -n


def steps_per_epoch(train_samples, world_size, local_batch_size):
    """The runner's sampler: floor(N / B) global batches of B = K x local rows an epoch, the
    same at every split of B; a tail that does not fill a global batch is skipped
    (runner/data/shard_sampler.cc; equal to floor(floor(N / K) / local))."""
    batch = world_size * local_batch_size
    spe = train_samples // batch
    if spe < 1:
        raise ConfigError(f"batch_size: the global batch of {batch} ({local_batch_size} a rank) "
                          f"is larger than the {train_samples} training samples; use a smaller "
                          "batch_size or more data")
    return spe


def smallest_limit(limits):
    """The run's steps from its budget's limits in steps: the smallest, each at least 1; 0 when
    there is none (a seconds budget only). As both run_values::TotalSteps overloads take it."""
    return min((max(steps, 1) for steps in limits), default=0)


def total_steps(budget_steps, budget_epochs, budget_samples, batch_size, spe):
    """The step budget (0 = a seconds budget only): the smallest of the step, epoch and sample
    limits, each at least 1 (run_values::TotalSteps). `spe` 0 = unknown (an epochs budget needs
    it)."""
    limits = []
    if budget_steps > 0:
        limits.append(budget_steps)
    if budget_epochs > 0:
        if spe <= 0:
            raise ConfigError("budget.epochs: the number of steps per epoch is unknown; tell the "
                              "client the training set size: run.steps(train_samples=N)")
        limits.append(llround(budget_epochs * float(spe)))
    if budget_samples > 0:
        limits.append((budget_samples + batch_size - 1) // batch_size)
    return smallest_limit(limits)


def _scale_by_rule(c, global_batch):
    ratio = float(global_batch) / float(c["base_batch_size"])
    rule = c["rule"]
    if rule == "none":
        return c["base"]
    if rule == "linear":
        return c["base"] * ratio
    if rule == "sqrt":
        return c["base"] * math.sqrt(ratio)
    raise ConfigError(f'lr.rule: unknown rule "{rule}"; use one of none, linear, sqrt')


def _is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _validate(c, global_batch, total, spe):
    def need(ok, message):
        if not ok:
            raise ConfigError(message)

    for key in ("base", "warmup_epochs", "gamma", "power", "final_lr_fraction"):
        need(_is_num(c[key]), f"lr.{key}: {json.dumps(c[key])} must be a finite number")
    for key in ("base_batch_size", "warmup_steps"):
        need(_is_int(c[key]), f"lr.{key}: {json.dumps(c[key])} must be an integer")
    need(c["base"] > 0, "lr.base: must be a positive number")
    need(c["base_batch_size"] > 0, "lr.base_batch_size: must be a positive integer")
    need(global_batch > 0, "batch_size: must be a positive integer")
    need(c["warmup_steps"] >= 0, "lr.warmup_steps: must be >= 0")
    need(c["warmup_epochs"] >= 0, "lr.warmup_epochs: must be >= 0")
    need(not (c["warmup_steps"] > 0 and c["warmup_epochs"] > 0),
         "lr.warmup_epochs: set either lr.warmup_steps or lr.warmup_epochs, not both")
    need(c["warmup_epochs"] == 0 or spe > 0,
         "lr.warmup_epochs: the number of steps per epoch is unknown; use lr.warmup_steps")
    f = c.get("warmup_start_fraction")
    if f is not None:
        need(_is_num(f), f"lr.warmup_start_fraction: {json.dumps(f)} must be a finite number")
        need(0 <= f <= 1, "lr.warmup_start_fraction: must be in [0, 1]")
    s = c["schedule"]
    need(s in ("constant", "step", "cosine", "poly"),
         f'lr.schedule: unknown schedule "{s}"; use one of constant, step, cosine, poly')
    if s == "step":
        need(c["gamma"] > 0, "lr.gamma: must be a positive number")
        m = c["milestones"]
        need(isinstance(m, list) and all(_is_int(x) for x in m),
             "lr.milestones: must be an array of integers")
        need(len(m) > 0, "lr.milestones: the step schedule needs at least one milestone")
        for i, x in enumerate(m):
            need(x >= 0 and (i == 0 or x > m[i - 1]),
                 "lr.milestones: must be non-negative steps in increasing order")
    if s in ("cosine", "poly"):
        need(total > 0, f'lr.schedule: "{s}" decays to the end of training, so it needs a budget '
                        "in steps, epochs or samples (not only seconds)")
        need(0 <= c["final_lr_fraction"] <= 1, "lr.final_lr_fraction: must be in [0, 1]")
    if s == "poly":
        need(c["power"] > 0, "lr.power: must be positive")


class LrSchedule:
    """runner::LrSchedule: `lr` is the config's `lr` object with the runner's defaults filled
    (RunConfig.lr). Raises ConfigError naming the field for a config the runner rejects."""

    def __init__(self, lr, global_batch, total_steps, steps_per_epoch=0):
        c = dict(lr)
        if _is_num(c.get("base")):
            c["base"] = float(c["base"])
        c["milestones"] = list(c.get("milestones", []))
        _validate(c, global_batch, total_steps, steps_per_epoch)
        self._c = c
        self.total_steps = total_steps
        self.scaled = _scale_by_rule(c, global_batch)
        self.warmup_steps = c["warmup_steps"]
        if c["warmup_epochs"] > 0:
            self.warmup_steps = llround(float(c["warmup_epochs"]) * float(steps_per_epoch))
        if (total_steps > 0 and self.warmup_steps >= total_steps and
                c["schedule"] in ("cosine", "poly")):
            raise ConfigError(f"lr.warmup_steps: warmup ({self.warmup_steps} steps) must end "
                              f"before the last step ({total_steps}) for the "
                              f'"{c["schedule"]}" schedule')

    def at(self, step):
        """The LR of step `step`, counting from 0 (the runner's step line k uses at(k - 1))."""
        c = self._c
        base, scaled = float(c["base"]), self.scaled
        step = max(step, 0)
        if step < self.warmup_steps:
            frac = float(step) / float(self.warmup_steps)
            f = c.get("warmup_start_fraction")
            start = base if f is None else scaled * float(f)
            return start + (scaled - start) * frac
        s = c["schedule"]
        if s == "constant":
            return scaled
        if s == "step":
            passed = bisect.bisect_right(c["milestones"], step)
            return scaled * math.pow(float(c["gamma"]), float(passed))
        span = float(self.total_steps - self.warmup_steps)
        t = min(float(step - self.warmup_steps), span) / span
        end = scaled * float(c["final_lr_fraction"])
        if s == "cosine":
            return end + (scaled - end) * 0.5 * (1.0 + math.cos(_PI * t))
        return end + (scaled - end) * math.pow(1.0 - t, float(c["power"]))
