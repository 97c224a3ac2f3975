#!/usr/bin/env python3
"""The PyTorch baseline for bench/runner: the same training as batchlab-runner, written the way a
PyTorch user would, with DistributedDataParallel over gloo when K > 1 (a plain module when K = 1,
the stronger baseline). Launched under mpirun like the runner:

    mpirun -np 2 python3 ddp_baseline.py --model mlp --batch 64 --steps 600 --threads 1

Prints one JSON line on rank 0: {"samples_per_second": ..., "steps": ..., "seconds": ...}.
python3-torch is a benchmark-only dependency; it is never needed to build or run batchlab.
"""
import argparse
import gzip
import json
import os
import tempfile
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

DATA = "/usr/share/datasets/fashion-mnist"


def read_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


class Cnn(nn.Module):  # the runner's cnn: two 5x5 conv + pool blocks, one dense hidden layer
    def __init__(self, c1, c2, hidden):
        super().__init__()
        self.conv1 = nn.Conv2d(1, c1, 5, padding=2)
        self.conv2 = nn.Conv2d(c1, c2, 5, padding=2)
        self.fc1 = nn.Linear(c2 * 7 * 7, hidden)
        self.fc2 = nn.Linear(hidden, 10)

    def forward(self, x):
        x = x.view(-1, 1, 28, 28)
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    ap.add_argument("--batch", type=int, default=64, help="global batch")
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--store", default=os.path.join(tempfile.gettempdir(), "ddp_baseline_store"))
    args = ap.parse_args()

    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
    world = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
    torch.set_num_threads(args.threads)
    if world > 1:
        dist.init_process_group("gloo", init_method="file://" + args.store, rank=rank,
                                world_size=world)

    x = torch.from_numpy(read_idx(f"{DATA}/train-images-idx3-ubyte.gz").copy())
    x = x.reshape(x.shape[0], -1).float().div_(255.0)
    y = torch.from_numpy(read_idx(f"{DATA}/train-labels-idx1-ubyte.gz").astype(np.int64))
    test_x = torch.from_numpy(read_idx(f"{DATA}/t10k-images-idx3-ubyte.gz")[:100].copy())
    test_x = test_x.reshape(test_x.shape[0], -1).float().div_(255.0)
    test_y = torch.from_numpy(read_idx(f"{DATA}/t10k-labels-idx1-ubyte.gz")[:100].astype(np.int64))

    torch.manual_seed(1)
    if args.model == "mlp":
        model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
    else:
        model = Cnn(16, 32, 128)
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    local = args.batch // world
    g = torch.Generator().manual_seed(1)
    shard = torch.randperm(x.shape[0], generator=g)[rank::world]
    shard = shard[torch.randperm(shard.numel(), generator=g)]
    per_epoch = shard.numel() // local

    def step(i):
        rows = shard[(i % per_epoch) * local:(i % per_epoch + 1) * local]
        xb, yb = x.index_select(0, rows), y.index_select(0, rows)
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()

    # Timed like the runner's `seconds`: from before the first step (cold steps included, the
    # runner has no untimed warm-up either) to after an evaluation on 100 test samples.
    if world > 1:
        dist.barrier()
    start = time.perf_counter()
    for i in range(args.steps):
        loss = step(i)
    with torch.no_grad():
        accuracy = (model(test_x).argmax(1) == test_y).float().mean().item()
    if world > 1:
        dist.barrier()
    seconds = time.perf_counter() - start
    if rank == 0:
        print(json.dumps({"samples_per_second": args.steps * args.batch / seconds,
                          "steps": args.steps, "seconds": seconds,
                          "final_loss": loss, "test_accuracy": accuracy}), flush=True)
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
