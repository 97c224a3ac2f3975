"""Values every rank shares, so every rank takes the same stop decision at the same step.

The step's loss, elapsed seconds and local squared gradient norm are averaged over ranks (one
small allreduce per step, as the runner's stats "gradient"); an eval line's values are rank 0's,
broadcast. Through torch.distributed when the program has initialized it; otherwise (one rank, or
a program without torch.distributed) the local values are used as they are, and a multi-rank
program must then pass values that are already identical on every rank.

    shared = for_world(world_size)
    loss, seconds = shared.mean([local_loss, local_seconds])
    acc, = shared.from_rank0([acc])
"""

import sys


class LocalValues:
    """One rank (or no collective library): values pass through."""

    def mean(self, values):
        return [float(v) for v in values]

    def from_rank0(self, values):
        return [float(v) for v in values]


class TorchValues:
    """torch.distributed collectives (gloo on CPU; nccl tensors on the current CUDA device)."""

    def __init__(self, dist, torch):
        self._dist, self._torch = dist, torch
        device = "cpu"
        if dist.get_backend() == "nccl":
            device = torch.device("cuda", torch.cuda.current_device())
        self._device = device

    def _tensor(self, values):
        return self._torch.tensor([float(v) for v in values], dtype=self._torch.float64,
                                  device=self._device)

    def mean(self, values):
        t = self._tensor(values)
        self._dist.all_reduce(t)
        return [v / self._dist.get_world_size() for v in t.tolist()]

    def from_rank0(self, values):
        t = self._tensor(values)
        self._dist.broadcast(t, src=0)
        return t.tolist()


def for_world(world_size):
    """TorchValues when torch.distributed is initialized with more than one rank, else
    LocalValues. Checked at each use: a program may call init() before init_process_group."""
    torch = sys.modules.get("torch")  # never imports torch for a program that does not use it
    if world_size > 1 and torch is not None:
        dist = torch.distributed
        if dist.is_available() and dist.is_initialized():
            return TorchValues(dist, torch)
    return LocalValues()
