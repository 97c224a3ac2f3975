"""Gradient-noise measurement inside a PyTorch program (McCandlish et al. 2018, App. A; the
runner's semantics: docs/runner.md "Gradient-noise measurement", docs/protocol.md).

Two batch sizes of the same step's gradient give the noise scale:
  * K > 1 ranks (DDP): a communication hook takes each rank's local gradient squared norm
    |g_local|^2 (B_small = local batch) before the allreduce and the averaged gradient's
    |g|^2 (B_big = global batch) after it; log_step averages |g_local|^2 over ranks together
    with the loss (one small allreduce).
  * one rank: Run.backward runs the local batch as `accumulation` micro-batches (two halves
    without accumulation on measured steps, the same update); each micro-batch's gradient is
    m * (accumulated after - before): B_small = micro batch, B_big = the batch.

    model = DDP(net)
    loss = run.backward(model, F.cross_entropy, x, y)   # registers the hook on first use
    # or, with your own backward:  run.watch(model); loss_fn(model(x), y).backward()

Only measured steps (gns.every_steps) compute norms; other steps run the plain allreduce.

The same hook times the allreduce on every step, as the runner does: a step's `comm_seconds` is
the wall time during which at least one of its bucket allreduces was in flight (from the
bucket's launch to its completion callback; overlapping buckets counted once), so the α–β fit,
the scaling tables and the projection work for users' programs (docs/methods.md §5).
"""

import threading
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


class NoiseProbe:
    """The hook's state: per-bucket squared norms of the step being measured."""

    def __init__(self, run, clock=time.perf_counter):
        self.run = run
        self.local = {}   # bucket index -> |local bucket|^2 (a 0-d tensor)
        self.merged = {}  # bucket index -> |averaged bucket|^2
        self.clock = clock
        # The allreduce time of the step in progress: the union of the buckets' in-flight
        # intervals. Completion callbacks can run on another thread, hence the lock.
        self._lock = threading.Lock()
        self._in_flight = 0
        self._busy_since = None
        self._comm = 0.0
        self._timed = False

    def launched(self):
        """A bucket's allreduce starts now."""
        with self._lock:
            if self._in_flight == 0:
                self._busy_since = self.clock()
            self._in_flight += 1
            self._timed = True

    def completed(self):
        """A bucket's allreduce completed now."""
        with self._lock:
            self._in_flight = max(0, self._in_flight - 1)
            if self._in_flight == 0 and self._busy_since is not None:
                self._comm += self.clock() - self._busy_since
                self._busy_since = None

    def take_comm(self):
        """This step's allreduce seconds (None if no bucket was synchronized) and resets."""
        with self._lock:
            if not self._timed:
                return None
            comm = self._comm
            if self._in_flight and self._busy_since is not None:  # still running: up to now
                now = self.clock()
                comm += now - self._busy_since
                self._busy_since = now
            self._comm = 0.0
            self._timed = self._in_flight > 0
            return comm

    def take(self):
        """Sums over buckets (floats) and clears; None if nothing was measured."""
        if not self.local or len(self.merged) != len(self.local):
            self.local.clear()
            self.merged.clear()
            return None
        small = sum(float(t) for t in self.local.values())
        big = sum(float(t) for t in self.merged.values())
        self.local.clear()
        self.merged.clear()
        return small, big


def gns_allreduce_hook(probe, bucket):
    """torch's default allreduce hook (average over ranks) plus, on measured steps, the bucket's
    squared norm before and after. A bucket synchronized twice in one step (accumulation
    without no_sync) keeps its last values."""
    buffer = bucket.buffer()
    world = dist.get_world_size()
    measuring = probe.run._measuring()
    index = bucket.index()
    if measuring:
        probe.local[index] = torch.dot(buffer, buffer)
    buffer.div_(world)
    probe.launched()
    fut = dist.all_reduce(buffer, async_op=True).get_future()

    def averaged(f):
        probe.completed()
        out = f.value()[0]
        if measuring:
            probe.merged[index] = torch.dot(out, out)
        return out

    return fut.then(averaged)


def watch(run, model):
    """Registers gns_allreduce_hook on a DDP model once (no-op for one rank or a plain module)."""
    if run._probe is not None or run.world_size < 2:
        return
    if not isinstance(model, DistributedDataParallel):
        raise TypeError("batchlab: the gradient-noise hook needs a DistributedDataParallel model "
                        f"with {run.world_size} ranks, got {type(model).__name__}")
    run._probe = NoiseProbe(run)
    model.register_comm_hook(run._probe, gns_allreduce_hook)


def _grads(params):
    return [p.grad.detach().clone() if p.grad is not None else torch.zeros_like(p)
            for p in params]


def _sq_norm(tensors):
    return sum(float(torch.dot(t.reshape(-1), t.reshape(-1))) for t in tensors)


def backward(run, model, loss_fn, x, y):
    """See Run.backward."""
    if run.world_size > 1:
        watch(run, model)
    n = x.shape[0]
    m = run.accumulation
    measure_micro = run.world_size == 1 and run._measuring()
    if measure_micro and m == 1 and n >= 2 and n % 2 == 0:
        m = 2  # two half-batches: the same update, and a second batch size
    if n % m:
        raise ValueError(f"batchlab: a local batch of {n} rows does not split into {m} "
                         "micro-batches; feed run.local_batch_size rows per step")
    mb = n // m
    per_micro = measure_micro and m > 1
    params = [p for p in model.parameters() if p.requires_grad]
    before = _grads(params) if per_micro else None
    ddp = isinstance(model, DistributedDataParallel)
    loss_sum, sq_small = 0.0, 0.0
    for i in range(m):
        xb, yb = (x, y) if m == 1 else (x[i * mb:(i + 1) * mb], y[i * mb:(i + 1) * mb])
        last = i == m - 1
        if ddp and not last:
            with model.no_sync():
                loss = loss_fn(model(xb), yb)
                (loss / m).backward()
        else:
            loss = loss_fn(model(xb), yb)
            (loss if m == 1 else loss / m).backward()
        loss_sum += float(loss.detach())
        if per_micro:
            after = _grads(params)
            # This micro-batch's gradient is m * (accumulated after - before).
            sq_small += _sq_norm([(a - b) * m for a, b in zip(after, before)])
            before = after
    if per_micro:
        run._gns = {"source": "micro", "b_small": mb, "b_big": run.batch_size_at(run.step + 1),
                    "sq_small": sq_small / m, "sq_big": _sq_norm(before)}
    return torch.tensor(loss_sum / m)
