#!/usr/bin/python3
"""Recomputes runner_lm_reference's transformer in PyTorch and compares (issue 13).

usage: /usr/bin/python3 lm_reference_check.py RUNNER_LM_REFERENCE DIR

Runs the C++ program, which writes the initial weights, a fixed batch and the runner's logits,
loss and gradients to DIR; builds the same architecture from torch.nn parts (nn.Embedding,
nn.LayerNorm, nn.MultiheadAttention with a causal mask, nn.Linear, F.gelu), loads the weights by
name, and checks that logits, loss and every parameter's gradient agree within 1e-4 relative
(max |difference| / max |reference|). Exit 0 when they agree, 1 otherwise.
"""
import json
import math
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, width, heads, bias):
        super().__init__()
        self.ln1 = nn.LayerNorm(width)
        self.attn = nn.MultiheadAttention(width, heads, bias=bias, batch_first=True)
        self.ln2 = nn.LayerNorm(width)
        self.fc = nn.Linear(width, 4 * width, bias=bias)
        self.out = nn.Linear(4 * width, width, bias=bias)

    def forward(self, h, mask):
        a = self.ln1(h)
        h = h + self.attn(a, a, a, attn_mask=mask, need_weights=False)[0]
        return h + self.out(F.gelu(self.fc(self.ln2(h))))


class Lm(nn.Module):
    def __init__(self, vocab, layers, width, heads, context, bias):
        super().__init__()
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Embedding(context, width)
        self.blocks = nn.ModuleList(Block(width, heads, bias) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width)

    def forward(self, x):
        t = x.shape[1]
        mask = torch.ones(t, t, dtype=torch.bool).triu(1)  # True: may not attend
        h = self.tok(x) + self.pos(torch.arange(t))
        for b in self.blocks:
            h = b(h, mask)
        return self.ln_f(h) @ self.tok.weight.t()  # tied output


def torch_name(name):
    """The runner's parameter name -> this module's ("block0.qkv.weight" -> ...in_proj_weight)."""
    parts = name.split(".")
    if parts[0].startswith("block"):
        i = parts[0][len("block"):]
        rest = ".".join(parts[1:])
        rest = {"qkv.weight": "attn.in_proj_weight", "qkv.bias": "attn.in_proj_bias",
                "proj.weight": "attn.out_proj.weight",
                "proj.bias": "attn.out_proj.bias"}.get(rest, rest)
        return f"blocks.{i}.{rest}"
    return name


def relative(a, b):
    return (a - b).abs().max().item() / max(b.abs().max().item(), 1e-30)


def main():
    program, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    subprocess.run([program, out], check=True)
    m = json.load(open(os.path.join(out, "manifest.json")))
    read = lambda name, dtype: torch.from_numpy(np.fromfile(os.path.join(out, name), dtype=dtype))
    params, grads = read("params.bin", np.float32), read("grads.bin", np.float32)
    model = Lm(m["vocab"], m["layers"], m["width"], m["heads"], m["context"], m["bias"])
    own = dict(model.named_parameters())
    state, ref_grads, at = {}, {}, 0
    for p in m["params"]:
        n = math.prod(p["shape"])
        name = torch_name(p["name"])
        state[name] = params[at:at + n].view(p["shape"])
        ref_grads[name] = grads[at:at + n].view(p["shape"])
        at += n
    assert at == params.numel(), "params.bin is not the manifest's size"
    assert set(state) == set(own), f"names differ: {set(state) ^ set(own)}"
    model.load_state_dict(state, strict=True)

    b, t, v = m["batch"], m["context"], m["vocab"]
    x = read("x.bin", np.int64).view(b, t)
    y = read("y.bin", np.int64).view(b, t)
    logits = model(x)
    loss = F.cross_entropy(logits.reshape(-1, v), y.reshape(-1))
    loss.backward()
    ref_logits = read("logits.bin", np.float32).view(b, t, v)

    failures = []
    checks = [("logits", relative(logits.detach(), ref_logits)),
              ("loss", abs(loss.item() - m["loss"]) / abs(m["loss"]))]
    checks += [(f"grad {n}", relative(own[n].grad, ref_grads[n])) for n in sorted(own)]
    for what, err in checks:
        print(f"{what}: relative difference {err:.2e}")
        if not err <= 1e-4:
            failures.append(what)
    print(f"loss: runner {m['loss']:.7f}, torch {loss.item():.7f} (ln 256 = {math.log(256):.7f})")
    if failures:
        print("DIFFER beyond 1e-4:", ", ".join(failures))
        return 1
    print("logits, loss and gradients agree within 1e-4")
    return 0


if __name__ == "__main__":
    sys.exit(main())
