"""Which rows of the training set each rank reads in each step (run.batches(N),
docs/byo-program.md): the order does not depend on how the run is split (docs/protocol.md,
"Elastic resume"). Every epoch the N rows are shuffled by a generator of (seed, epoch) — one
global order, the same on every rank at every rank count — and a step's global batch is the next
B rows of it; rank r of K reads rows [r·B/K, (r+1)·B/K) of that batch. A step whose global
batch no longer fits in the rows left starts the next epoch (floor(N / B) steps an epoch at
every K: the runner's sampler rule, runner/data/shard_sampler.h; batch_schedule.data_cursor).
So a checkpoint written at K ranks goes on at K' on the same samples. At one rank this is the
order client format 1 read. Pure Python: no torch needed, and the same lists on every machine
(random.Random with a string seed hashes it with SHA-512)."""

import random


def epoch_order(train_samples, seed, epoch):
    """All N rows of epoch `epoch` in the order the run reads them (every rank the same)."""
    order = list(range(train_samples))
    random.Random(f"batchlab-rows:{seed}:{epoch}").shuffle(order)
    return order


def rank_part(order, position, local_batch, rank):
    """Rank `rank`'s part of the global batch that starts `position` rows into `order`."""
    start = position + rank * local_batch
    return order[start:start + local_batch]


def redeal(rows, seed, at_step):
    """A branch with another seed than its trunk's: the rows its trunk had not read this epoch,
    in an order of the branch's seed (the same rows: the same data position), the same on every
    rank (stream 0 is the one rank 0 dealt with in client format 1, so one rank deals as
    before)."""
    rows = list(rows)
    random.Random(f"batchlab-branch:{seed}:0:{at_step}").shuffle(rows)
    return rows
