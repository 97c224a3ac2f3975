"""Values every rank shares, so every rank takes the same stop decision at the same step.

The step's loss, elapsed seconds and local squared gradient norm are averaged over ranks (one
small allreduce per step, as the runner's stats "gradient"); an eval line's values are rank 0's,
broadcast. Through torch.distributed when the program has initialized it; otherwise (one rank, or
a program without torch.distributed) the local values are used as they are, and a multi-rank
program must then pass values that are already identical on every rank.

    shared = for_world(world_size)
    loss, seconds = shared.mean([local_loss, local_seconds])
    acc, = shared.from_rank0([acc])
    missing = shared.arrive("log_eval/3/50", timeout)   # [] once every rank reached it
"""

import datetime
import sys


class LocalValues:
    """One rank (or no collective library): values pass through."""

    def arrive(self, key, timeout):
        return []

    def post(self, key, text):
        pass

    def collect(self, key):
        return None

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

    def arrive(self, key, timeout):
        """Every rank marks `key` in torch.distributed's store and waits up to `timeout` seconds
        for every other rank's mark: [] when all came, else the ranks that did not (so a rank
        that skips a collective is named instead of hanging the others in it). [] without a
        store to ask (then the collective itself is the only wait)."""
        store = self._store()
        if store is None:
            return []
        rank, world = self._dist.get_rank(), self._dist.get_world_size()
        keys = [f"batchlab/arrive/{key}/{r}" for r in range(world)]
        store.add(keys[rank], 1)
        try:
            store.wait(keys, datetime.timedelta(seconds=timeout))
            return []
        except RuntimeError:  # timed out: who is missing (add 0 reads a count; PrefixStore
            # has no check() in torch 1.13)
            return [r for r in range(world) if store.add(keys[r], 0) == 0]

    def post(self, key, text):
        """Every rank leaves `text` for rank 0, before a collective every rank joins; rank 0
        reads them all with collect(key) after it (so it never waits for a key)."""
        store = self._store()
        if store is not None:
            store.set(f"batchlab/post/{key}/{self._dist.get_rank()}", text)

    def collect(self, key):
        """Rank 0: every rank's posted text, rank 0's first; None without a store."""
        store = self._store()
        if store is None:
            return None
        return [store.get(f"batchlab/post/{key}/{r}").decode()
                for r in range(self._dist.get_world_size())]

    def _store(self):
        try:
            return self._dist.distributed_c10d._get_default_store()
        except (AttributeError, RuntimeError, ValueError):
            return None

    def mean(self, values):
        t = self._tensor(values)
        self._dist.all_reduce(t)
        return [v / self._dist.get_world_size() for v in t.tolist()]

    def from_rank0(self, values):
        t = self._tensor(values)
        self._dist.broadcast(t, src=0)
        return t.tolist()


# The store-backed calls, for any values object (one without them, e.g. a test's own, has no
# store: nothing posted, every rank taken as arrived).
def arrive(values, key, timeout):
    f = getattr(values, "arrive", None)
    return f(key, timeout) if f is not None else []


def post(values, key, text):
    f = getattr(values, "post", None)
    if f is not None:
        f(key, text)


def collect(values, key):
    f = getattr(values, "collect", None)
    return f(key) if f is not None else None


def for_world(world_size):
    """TorchValues when torch.distributed is initialized with more than one rank, else
    LocalValues. Checked at each use: a program may call init() before init_process_group."""
    torch = sys.modules.get("torch")  # never imports torch for a program that does not use it
    if world_size > 1 and torch is not None:
        dist = torch.distributed
        if dist.is_available() and dist.is_initialized():
            return TorchValues(dist, torch)
    return LocalValues()
