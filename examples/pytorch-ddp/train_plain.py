#!/usr/bin/python3
"""A small ResNet-style CNN on Fashion-MNIST with PyTorch DistributedDataParallel (gloo), written
the ordinary way. Run it with `batchlab-rank --spawn 2 -- python3 train_plain.py` (a plain
torchrun-style launcher, built next to `batchlab`; torchrun itself crashes with torch 1.13 on the
reference machine) or, on one process, `python3 train_plain.py`. train.py is the same program joined to batchlab (see the diff in
README.md).
"""
import argparse
import gzip
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

DATA = "/usr/share/datasets/fashion-mnist"


def read_idx(path, limit):
    """An IDX file (gzip): uint8 images [N, 1, 28, 28] scaled to [0, 1], or int64 labels [N]."""
    with gzip.open(path, "rb") as f:
        ndim = f.read(4)[3]
        dims = [int.from_bytes(f.read(4), "big") for _ in range(ndim)]
        dims[0] = min(dims[0], limit or dims[0])
        row = 1 if ndim == 1 else dims[1] * dims[2]
        data = torch.frombuffer(bytearray(f.read(dims[0] * row)), dtype=torch.uint8)
    return data.long() if ndim == 1 else data.view(-1, 1, 28, 28).float().div(255)


def load(split, limit=None):
    return (read_idx(f"{DATA}/{split}-images-idx3-ubyte.gz", limit),
            read_idx(f"{DATA}/{split}-labels-idx1-ubyte.gz", limit))


class Block(nn.Module):
    """Two 3x3 convolutions with batch norm and a shortcut (He et al. 2016)."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


class ResNet(nn.Module):
    """28x28 -> stem (stride 2) -> 14x14 block -> 7x7 block -> pool -> 10 classes."""

    def __init__(self, width):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, width, 3, 2, 1, bias=False),
                                  nn.BatchNorm2d(width), nn.ReLU())
        self.blocks = nn.Sequential(Block(width, width, 1), Block(width, 2 * width, 2))
        self.head = nn.Linear(2 * width, 10)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))


def evaluate(model, x, y):
    """Test accuracy and loss (every rank evaluates the same held-out rows)."""
    model.eval()
    with torch.no_grad():
        out = torch.cat([model(x[i:i + 1000]) for i in range(0, len(x), 1000)])
    model.train()
    return (out.argmax(1) == y).float().mean().item(), F.cross_entropy(out, y).item()


def batches(n, local_batch, rank, world, seed, start=(0, 0)):
    """This rank's part of every step's global batch (world x local_batch rows of one order of
    all n rows, reshuffled every epoch, the same at every world size), from `start` = (epoch,
    global batches already taken in it): the rows of the uninterrupted run, at any rank count."""
    g = torch.Generator().manual_seed(seed)
    batch = world * local_batch
    epoch, skip = start
    for _ in range(epoch):  # the shuffles of the epochs already trained
        torch.randperm(n, generator=g)
    while True:
        order = torch.randperm(n, generator=g)
        for i in range(skip * batch, n - batch + 1, batch):
            yield order[i + rank * local_batch:i + (rank + 1) * local_batch]
        skip = 0


def parse_args():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--batch-size", type=int, default=128, help="global batch size")
    p.add_argument("--lr", type=float, default=0.02)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--eval-every", type=int, default=50)
    p.add_argument("--width", type=int, default=8)
    p.add_argument("--train-samples", type=int, default=60000)
    p.add_argument("--test-samples", type=int, default=2000)
    p.add_argument("--seed", type=int, default=1)
    return p.parse_args()


def main():
    args = parse_args()
    for key, value in (("RANK", "0"), ("WORLD_SIZE", "1"), ("MASTER_ADDR", "127.0.0.1"),
                       ("MASTER_PORT", "29500")):
        os.environ.setdefault(key, value)  # one process without a launcher
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)
    train_x, train_y = load("train", args.train_samples)
    test_x, test_y = load("t10k", args.test_samples)

    torch.manual_seed(args.seed)
    model = DDP(ResNet(args.width))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    local_batch = args.batch_size // world
    rows = batches(len(train_x), local_batch, rank, world, args.seed)
    for step in range(1, args.steps + 1):
        idx = next(rows)
        x, y = train_x[idx], train_y[idx]
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if step % args.eval_every == 0:
            acc, test_loss = evaluate(model, test_x, test_y)
            if rank == 0:
                print(f"step {step}: loss {loss.item():.4f} test accuracy {acc:.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
