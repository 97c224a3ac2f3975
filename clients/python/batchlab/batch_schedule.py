"""A batch-size schedule (config `batch_schedule`), computed exactly as batchlab-runner does
(base/run_values.h, run_values::BatchSchedule; kept equal by
tests/clients/batch_schedule_parity_test.py).

    s = BatchSchedule(64, at_samples=[1000], batch_sizes=[256])
    s.at(16)               # Point(batch=64, samples_before=960, segment=0)
    s.at(17).batch         # 256: the first step that starts with >= 1000 samples seen
    s.samples_after(17)    # 1280
    s.steps_for(1280)      # 17
    total_steps(s, budget_samples=5000)

The rule: the run starts at batch_size (first_batch); from the first step (steps count from 1)
that begins with at least at_samples[i] training samples seen, it trains at batch_sizes[i].
Everything follows from the step alone, so a resumed run needs nothing but its step. An empty
schedule is a constant batch.
"""

import collections

from .lr import llround, smallest_limit

# batch: the global batch of the step; samples_before: training samples seen before it;
# segment: 0 = first_batch, i + 1 = batch_sizes[i].
Point = collections.namedtuple("Point", "batch samples_before segment")


class BatchSchedule:
    """run_values::BatchSchedule: `at_samples` increasing and > 0, one `batch_sizes` entry
    each (RunConfig checks both)."""

    def __init__(self, first_batch, at_samples=(), batch_sizes=()):
        self.first_batch = int(first_batch)
        self.at_samples = [int(x) for x in at_samples]
        self.batch_sizes = [int(x) for x in batch_sizes]

    @property
    def constant(self):
        return not self.at_samples

    def at(self, step):
        """Point(batch, samples_before, segment) of step `step` (from 1)."""
        batch, before, segment = self.first_batch, 0, 0
        done = 0  # steps before the current segment's first
        for i, at in enumerate(self.at_samples):
            # Steps of the current segment before the samples reach at (0 if they already do).
            need = max(at - before, 0)
            steps = (need + batch - 1) // batch
            if step - 1 < done + steps:
                break  # `step` is in this segment
            done += steps
            before += steps * batch
            batch = self.batch_sizes[i]
            segment = i + 1
        before += max(step - 1 - done, 0) * batch
        return Point(batch, before, segment)

    def batch_at(self, step):
        return self.at(step).batch

    def samples_after(self, steps):
        """Training samples seen after `steps` steps."""
        if steps <= 0:
            return 0
        last = self.at(steps)
        return last.samples_before + last.batch

    def steps_for(self, samples):
        """Steps until at least `samples` samples are seen (0 for samples <= 0)."""
        if samples <= 0:
            return 0
        seen, done, batch = 0, 0, self.first_batch
        for i, at in enumerate(self.at_samples):
            if seen >= samples:
                break
            until = min(at, samples)
            steps = (max(until - seen, 0) + batch - 1) // batch
            done += steps
            seen += steps * batch
            if seen >= samples:
                return done
            batch = self.batch_sizes[i]
        return done + (samples - seen + batch - 1) // batch

    def largest_batch(self):
        return max([self.first_batch] + self.batch_sizes)

    def segments(self):
        """[(first_step, batch), ...]: the step each segment starts at (segments a switch
        skips, because the samples already passed the next switch, are left out)."""
        out, step = [], 1
        batch, before = self.first_batch, 0
        for i, at in enumerate(self.at_samples):
            steps = (max(at - before, 0) + batch - 1) // batch
            if steps > 0:
                out.append((step, batch))
            step += steps
            before += steps * batch
            batch = self.batch_sizes[i]
        out.append((step, batch))
        return out


def total_steps(schedule, budget_steps=0, budget_epochs=0.0, budget_samples=0,
                epoch_samples=0):
    """run_values::TotalSteps(budget, schedule, epoch_samples): the smallest of the limits, each
    at least 1; a samples limit is reached at steps_for(samples); an epochs limit is
    round(epochs x epoch_samples) samples (epoch_samples: the rows all ranks together read in one
    pass; 0 ignores an epochs limit). 0 = a seconds budget only."""
    limits = []
    if budget_steps > 0:
        limits.append(budget_steps)
    if budget_samples > 0:
        limits.append(schedule.steps_for(budget_samples))
    if budget_epochs > 0 and epoch_samples > 0:
        limits.append(schedule.steps_for(llround(float(budget_epochs) * float(epoch_samples))))
    return smallest_limit(limits)


def data_cursor(schedule, world_size, shard_rows, steps, start_epoch=0, start_rows=0):
    """(epoch, batches, rows): where this rank's data stands after `steps` steps, by the runner's
    sampler (runner/data/shard_sampler.cc): each rank keeps `shard_rows` rows per epoch and
    takes step s's local batch (at(s).batch / world_size) from them in order; a step whose local
    batch no longer fits in what is left of the epoch starts the next epoch. `epoch` is the one
    the last step read from (the runner's step-line epoch), `batches` and `rows` what that epoch
    gave so far. shard_rows 0 (unknown): one endless epoch. A branch of a branch study starts
    where its trunk's data stood: `start_rows` rows into epoch `start_epoch` (batches then
    count the branch's own)."""
    epoch, batches, rows = start_epoch, 0, start_rows
    if steps <= 0:
        return epoch, 0, rows
    if shard_rows <= 0:
        return epoch, steps, rows + schedule.samples_after(steps) // world_size
    segments = schedule.segments()
    for n, (first, batch) in enumerate(segments):
        if first > steps:
            break
        end = segments[n + 1][0] if n + 1 < len(segments) else steps + 1
        k = min(end, steps + 1) - first  # this segment's steps up to `steps`
        local = batch // world_size
        fit = (shard_rows - rows) // local  # steps still fitting in the current epoch
        if k <= fit:
            batches, rows = batches + k, rows + k * local
        else:
            per_epoch = shard_rows // local
            rest = k - fit
            epoch += 1 + (rest - 1) // per_epoch
            batches = (rest - 1) % per_epoch + 1
            rows = batches * local
    return epoch, batches, rows
