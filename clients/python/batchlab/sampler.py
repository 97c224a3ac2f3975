"""Which rows of the training set each rank reads in each step (run.batches(N), docs/byo-program.md):
every epoch the N rows are shuffled by a generator of (seed, epoch) and dealt round-robin to the
ranks, each keeping floor(N / world_size); a step takes its local batch from the rank's rows
left in the epoch, and a step whose local batch no longer fits starts the next epoch (the
runner's sampler rule, batch_schedule.data_cursor). Pure Python: no torch needed, and the same
lists on every machine (random.Random with a string seed hashes it with SHA-512)."""

import random


def shard_order(train_samples, world_size, rank, seed, epoch):
    """This rank's rows of epoch `epoch`, in the order it reads them."""
    order = list(range(train_samples))
    random.Random(f"batchlab-rows:{seed}:{epoch}").shuffle(order)
    return order[rank::world_size][:train_samples // world_size]


def redeal(rows, seed, rank, at_step):
    """A branch with another seed than its trunk's: the rows its trunk had not read this epoch,
    in an order of the branch's seed (the same rows: the same data position)."""
    rows = list(rows)
    random.Random(f"batchlab-branch:{seed}:{rank}:{at_step}").shuffle(rows)
    return rows
