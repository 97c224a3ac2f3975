#!/usr/bin/python3
"""A GPT-style decoder-only language model in plain PyTorch, joined to batchlab: token embedding
plus learned positions, pre-norm blocks of causal self-attention and an MLP, a tied output
layer, AdamW with decoupled weight decay on the matrices only, the LR from the study's config
(warmup, then constant or cosine), trained on the Python standard library's own sources
(/usr/lib/python3.X/*.py, which ship with every Debian python3) as bytes.

Everything batchlab-specific is the client: run.steps() (budget, the LR of every step,
including the batch-size schedule's), run.batches() (each step's rows: reshuffled every epoch,
resumed after a preemption, continued from a trunk as a branch), run.backward() (the gradient
noise), run.resumable() (checkpoints and branch starts), run.log_step()/log_eval().

A row i of the training set is the window of `context` + 1 bytes starting at i x context of the
training text; the held-out text is every 10th file, the rest trains. `params`: context,
d_model, layers, heads, train_bytes, test_windows, weight_decay, dropout.
"""
import glob
import os
import sys

import batchlab
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def corpus(train_bytes):
    """(train, test) byte tensors: the standard library's top-level modules, sorted by name,
    every 10th held out."""
    files = sorted(glob.glob(os.path.join(os.path.dirname(os.__file__), "*.py")))
    if not files:
        sys.exit(f"no Python sources next to {os.__file__}")
    train, test = bytearray(), bytearray()
    for i, path in enumerate(files):
        with open(path, "rb") as f:
            (test if i % 10 == 9 else train).extend(f.read())
    train = torch.frombuffer(train[:train_bytes] if train_bytes else train, dtype=torch.uint8)
    return train.long(), torch.frombuffer(test, dtype=torch.uint8).long()


class Block(nn.Module):
    """Pre-norm: x + attn(ln(x)), then x + mlp(ln(x)); causal multi-head attention."""

    def __init__(self, d, heads, dropout):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.drop = nn.Dropout(dropout)

    def forward(self, x, mask):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).unbind(2)
        q, k, v = (z.transpose(1, 2) for z in (q, k, v))  # [b, heads, t, d / heads]
        att = (q @ k.transpose(-2, -1)) * (d // self.heads) ** -0.5
        att = att.masked_fill(mask, float("-inf")).softmax(-1)
        y = (self.drop(att) @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.drop(self.proj(y))
        return x + self.drop(self.mlp(self.ln2(x)))


class GPT(nn.Module):
    def __init__(self, vocab, context, d, layers, heads, dropout):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.zeros(context, d))
        self.blocks = nn.ModuleList(Block(d, heads, dropout) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.apply(self._init)
        nn.init.normal_(self.pos, std=0.02)
        for b in self.blocks:  # GPT-2: residual projections scaled by depth
            nn.init.normal_(b.proj.weight, std=0.02 / (2 * layers) ** 0.5)
            nn.init.normal_(b.mlp[2].weight, std=0.02 / (2 * layers) ** 0.5)

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.tok(idx) + self.pos[:t]
        mask = torch.ones(t, t, dtype=torch.bool, device=idx.device).triu(1)  # the future
        for b in self.blocks:
            x = b(x, mask)
        return self.ln(x) @ self.tok.weight.t()  # tied output layer: logits [b, t, vocab]


def lm_loss(logits, targets):
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def windows(text, rows, context):
    """Inputs and next-byte targets of the given rows (window starts at row x context)."""
    starts = torch.as_tensor(rows) * context
    idx = starts[:, None] + torch.arange(context + 1)
    w = text[idx]
    return w[:, :-1], w[:, 1:]


def main():
    run = batchlab.init()
    for key, value in (("RANK", "0"), ("WORLD_SIZE", "1"), ("MASTER_ADDR", "127.0.0.1"),
                       ("MASTER_PORT", "29500")):
        os.environ.setdefault(key, value)  # one process without a launcher
    dist.init_process_group("gloo")
    torch.set_num_threads(run.cfg.threads)
    p = run.params
    context = p.get("context", 64)
    train, test = corpus(p.get("train_bytes", 0))
    n = (len(train) - 1) // context  # training rows (windows)
    test_x, test_y = windows(test, range(p.get("test_windows", 128)), context)

    torch.manual_seed(run.seed)
    net = GPT(256, context, p.get("d_model", 64), p.get("layers", 2), p.get("heads", 4),
              p.get("dropout", 0.0))
    model = DDP(net)
    decay = [q for q in net.parameters() if q.dim() >= 2]
    no_decay = [q for q in net.parameters() if q.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": p.get("weight_decay", 0.1)},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=run.lr(1), betas=(0.9, 0.95))
    run.resumable(model=model, optimizer=opt)  # checkpoints, resumes, branch starts
    rows = run.batches(n)
    for step in run.steps(n, opt):  # the LR of every step, the schedule's batch
        x, y = windows(train, next(rows), context)
        opt.zero_grad(set_to_none=True)
        loss = run.backward(model, lm_loss, x, y)  # + gradient noise
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if run.log_step(loss, tokens=run.samples_after(step) * context):
            model.eval()
            with torch.no_grad():
                test_loss = sum(lm_loss(model(test_x[i:i + 64]), test_y[i:i + 64]).item() *
                                len(test_x[i:i + 64]) for i in range(0, len(test_x), 64))
            model.train()
            run.log_eval(test_loss=test_loss / len(test_x))
            if run.rank == 0:
                print(f"step {step}: loss {loss.item():.4f} test loss "
                      f"{test_loss / len(test_x):.4f}", flush=True)
    run.finish()


if __name__ == "__main__":
    main()
