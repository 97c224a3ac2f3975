#!/usr/bin/env python3
"""The GPU checks of the built-in runner (docs/gpu.md), run by scripts/gpu/check.sh on a machine
with a CUDA device, a CUDA build of batchlab-runner and PyTorch:

  1. throughput: the runner against the same model in PyTorch on the same GPU (same batch,
     optimizer, precision, data resident on the device, one loss read per step as the runner's
     stop decision needs), MLP, CNN and the transformer LM, in fp32, bf16 and fp16; samples/s (and
     tokens/s for the LM) over the second half of each run, so start-up and warm-up are outside
     the window on both sides;
  2. fp16 loss scaling exercised: a run whose first scale (10^10) overflows skips
     steps, lowers the scale, and still learns;
  3. exact resume on the GPU: a run resumed from its step-30 checkpoint repeats the uninterrupted
     run's losses bit for bit (MLP, fp32);
  4. the LM critical-batch grid (sweeps/lm_critical_batch.json's runs) on the GPU, with its wall
     time and each run's steps to the target.

Writes one JSON line per result to --out/results.jsonl and a summary to stdout. Every check
states what it expects and the script exits 1 if one fails (throughput is reported, not judged).

    python3 scripts/gpu/runner_vs_pytorch.py --runner build-gpu/runner/batchlab-runner \\
        --fashion-mnist DIR --corpus FILE --out DIR [--quick]
"""
import argparse
import gzip
import json
import os
import shutil
import struct
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

FAILED = []
DEVICE = "cuda"  # --device cpu: a dry run of this script on a machine without a GPU


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what, flush=True)
    if not ok:
        FAILED.append(what)


# ---- the runner's models, in PyTorch (runner/models/models.cc, runner/models/transformer.cc) ----

class Mlp(nn.Module):
    def __init__(self, inp, hidden, out):
        super().__init__()
        dims = [inp] + hidden + [out]
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims, dims[1:]))

    def forward(self, x):
        for i, l in enumerate(self.layers):
            x = l(x)
            if i + 1 < len(self.layers):
                x = F.relu(x)
        return x


class Cnn(nn.Module):
    def __init__(self, c1, c2, hidden):
        super().__init__()
        self.conv1 = nn.Conv2d(1, c1, 5, padding=2)
        self.conv2 = nn.Conv2d(c1, c2, 5, padding=2)
        self.fc1 = nn.Linear(c2 * 7 * 7, hidden)
        self.fc2 = nn.Linear(hidden, 10)

    def forward(self, x):
        x = x.view(-1, 1, 28, 28).contiguous(memory_format=torch.channels_last)
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2(x), 2))
        x = F.relu(self.fc1(x.reshape(x.size(0), -1)))
        return self.fc2(x)


class Block(nn.Module):
    def __init__(self, w, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(w), nn.LayerNorm(w)
        self.qkv, self.proj = nn.Linear(w, 3 * w), nn.Linear(w, w)
        self.fc, self.out = nn.Linear(w, 4 * w), nn.Linear(4 * w, w)

    def forward(self, h, mask):
        b, t, w = h.shape
        d = w // self.heads
        qkv = self.qkv(self.ln1(h)).view(b, t, 3, self.heads, d).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        s = (q @ k.transpose(-2, -1)) / d ** 0.5
        s = s.masked_fill(mask[:t, :t], float("-inf"))
        y = (torch.softmax(s, -1) @ v).transpose(1, 2).reshape(b, t, w)
        h = h + self.proj(y)
        return h + self.out(F.gelu(self.fc(self.ln2(h))))


class Transformer(nn.Module):
    def __init__(self, layers, w, heads, context):
        super().__init__()
        self.tok, self.pos = nn.Embedding(256, w), nn.Embedding(context, w)
        self.blocks = nn.ModuleList(Block(w, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(w)
        self.register_buffer("mask", torch.ones(context, context, dtype=torch.bool).triu(1))

    def forward(self, x):
        tokens = x.long()
        h = self.tok(tokens) + self.pos(torch.arange(tokens.size(1), device=x.device))
        for b in self.blocks:
            h = b(h, self.mask)
        return self.ln_f(h) @ self.tok.weight.t()


# ---- data ----

def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return torch.frombuffer(bytearray(data[4 + 4 * ndim:]), dtype=torch.uint8).view(*dims)


def fashion(dir_):
    x = read_idx(os.path.join(dir_, "train-images-idx3-ubyte.gz")).reshape(-1, 784)
    y = read_idx(os.path.join(dir_, "train-labels-idx1-ubyte.gz")).long()
    return x, y


def text(path, context):
    data = open(path, "rb").read()
    train = len(data) - len(data) // 10
    n = (train - 1) // context
    b = torch.frombuffer(bytearray(data[:n * context + 1]), dtype=torch.uint8).long()
    x = b[:n * context].view(n, context).float()
    y = b[1:n * context + 1].view(n, context)
    return x, y


# ---- the runner ----

def runner_config(case, precision, out_dir, steps, fmnist, corpus, extra=None):
    c = {"seed": 1, "batch_size": case["batch"], "precision": precision,
         "optimizer": dict(case["optimizer"]),
         "lr": {"base": case["lr"], "base_batch_size": case["batch"], "rule": "none",
                "schedule": "constant"},
         "budget": {"steps": steps}, "eval": {"every_steps": steps // 2, "subset": 256},
         "gns": {"every_steps": 0}, "threads": 1,
         "metrics_path": os.path.join(out_dir, "metrics.jsonl")}
    if case["model"] == "transformer":
        c["data"] = {"name": "text", "path": corpus}
        c["model"] = {"name": "transformer", **case["shape"]}
    else:
        c["data"] = {"name": "idx", "path": fmnist}
        c["model"] = {"name": case["model"], "hidden": case["hidden"],
                      **({"channels": case["channels"]} if case["model"] == "cnn" else {})}
    if extra:
        c.update(extra)
    return c


def run_runner(runner, config, out_dir, env=None):
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "config.json")
    with open(path, "w") as f:
        json.dump(config, f)
    e = dict(os.environ, BATCHLAB_DEVICE=DEVICE, **(env or {}))
    libs = os.environ.get("BATCHLAB_RUNNER_LIBS")  # check.sh: unpacked Open MPI etc.
    if libs:
        e["LD_LIBRARY_PATH"] = libs + (":" + e["LD_LIBRARY_PATH"] if e.get("LD_LIBRARY_PATH") else "")
    t = time.time()
    p = subprocess.run([runner, "--config", path], env=e, capture_output=True, text=True)
    wall = time.time() - t
    lines = []
    if os.path.exists(config["metrics_path"]):
        with open(config["metrics_path"]) as f:
            lines = [json.loads(l) for l in f if l.strip()]
    return p.returncode, lines, wall, p.stderr[-2000:]


def window_rate(lines, samples_per_step, steps):
    """Samples/s between the mid-run evaluation and the end (both include their evaluation of
    256 held-out samples, so the window holds exactly steps/2 steps and one evaluation)."""
    evals = [l for l in lines if l["kind"] == "eval"]
    end = [l for l in lines if l["kind"] == "end"][0]
    mid = [e for e in evals if e["step"] == steps // 2][0]
    last = [e for e in evals if e["step"] == steps][-1]
    seconds = last["seconds"] - mid["seconds"]
    return (steps - steps // 2) * samples_per_step / seconds, end


# ---- PyTorch, the same loop ----

def sync():
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def run_pytorch(case, precision, steps, fmnist, corpus):
    torch.manual_seed(1)
    dev = torch.device(DEVICE)
    if case["model"] == "transformer":
        s = case["shape"]
        model = Transformer(s["layers"], s["width"], s["heads"], s["context"])
        x, y = text(corpus, s["context"])
    else:
        x, y = fashion(fmnist)
        model = Mlp(784, case["hidden"], 10) if case["model"] == "mlp" else \
            Cnn(case["channels"][0], case["channels"][1], case["hidden"][0])
    model = model.to(dev)
    if case["model"] == "cnn":
        model = model.to(memory_format=torch.channels_last)
    x, y = x.to(dev), y.to(dev)
    o = case["optimizer"]
    if o["name"] == "momentum":
        opt = torch.optim.SGD(model.parameters(), lr=case["lr"], momentum=o["momentum"])
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=case["lr"],
                                weight_decay=o.get("weight_decay", 0.0))
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    if hasattr(torch.amp, "GradScaler"):
        scaler = torch.amp.GradScaler("cuda", enabled=precision == "fp16")
    else:  # PyTorch before 2.3
        scaler = torch.cuda.amp.GradScaler(enabled=precision == "fp16")
    n, b = x.size(0), case["batch"]
    order = torch.randperm(n, device=dev)
    pos = 0
    t_mid = None
    for step in range(1, steps + 1):
        if pos + b > n:
            order, pos = torch.randperm(n, device=dev), 0
        rows = order[pos:pos + b]
        pos += b
        xb = x.index_select(0, rows)
        if case["model"] != "transformer":
            xb = xb.float() / 255.0
        yb = y.index_select(0, rows)
        with torch.autocast(DEVICE, dtype=dtype, enabled=dtype is not None):
            out = model(xb).float()
            loss = F.cross_entropy(out.reshape(-1, out.size(-1)), yb.reshape(-1))
        opt.zero_grad(set_to_none=False)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        loss.item()  # the runner reads each step's loss (divergence, target, stop)
        if step == steps // 2:
            sync()
            t_mid = time.time()
    with torch.no_grad(), torch.autocast(DEVICE, dtype=dtype, enabled=dtype is not None):
        xe = x[:256] if case["model"] == "transformer" else x[:256].float() / 255.0
        model(xe).float().sum().item()  # the runner's window holds an evaluation of 256 samples
    sync()
    return (steps - steps // 2) * b / (time.time() - t_mid), loss.item()


CASES = [
    {"name": "mlp", "model": "mlp", "hidden": [128], "batch": 256, "lr": 0.05,
     "optimizer": {"name": "momentum", "momentum": 0.9}, "steps": 400},
    {"name": "cnn", "model": "cnn", "hidden": [128], "channels": [16, 32], "batch": 256,
     "lr": 0.05, "optimizer": {"name": "momentum", "momentum": 0.9}, "steps": 200},
    {"name": "lm", "model": "transformer",
     "shape": {"layers": 2, "width": 128, "heads": 4, "context": 64}, "batch": 64, "lr": 0.003,
     "optimizer": {"name": "adamw", "weight_decay": 0.1}, "steps": 200},
    {"name": "lm-large", "model": "transformer",
     "shape": {"layers": 6, "width": 512, "heads": 8, "context": 256}, "batch": 32, "lr": 0.0006,
     "optimizer": {"name": "adamw", "weight_decay": 0.1}, "steps": 100},
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runner", required=True)
    ap.add_argument("--fashion-mnist", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--runs", default="build-gpu/runs", help="the runs' folders")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--device", default="cuda", help="cpu: a dry run without a GPU (no fp16)")
    ap.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    ap.add_argument("--only", default="", help="comma-separated parts: speed,fp16,resume,study")
    a = ap.parse_args()
    global DEVICE
    DEVICE = a.device
    precisions = ["fp32", "bf16", "fp16"] if DEVICE == "cuda" else ["fp32", "bf16"]
    parts = set(a.only.split(",")) if a.only else {"speed", "fp16", "resume", "study"}
    parts.discard("allreduce")  # check.sh's part
    os.makedirs(a.out, exist_ok=True)
    results = open(os.path.join(a.out, "results.jsonl"), "a")
    work = a.runs
    gpu = torch.cuda.get_device_name(0) if DEVICE == "cuda" else "cpu"
    print(f"# device: {gpu}; torch {torch.__version__}", flush=True)

    def record(row):
        row["device"] = gpu
        results.write(json.dumps(row) + "\n")
        results.flush()

    if "speed" in parts:
        for case in [c for c in CASES if not a.cases or c["name"] in a.cases.split(",")]:
            steps = max(40, case["steps"] // 4) if a.quick else case["steps"]
            tokens = case["shape"]["context"] if case["model"] == "transformer" else 0
            for precision in precisions:
                d = os.path.join(work, f"{case['name']}-{precision}")
                shutil.rmtree(d, ignore_errors=True)
                cfg = runner_config(case, precision, d, steps, a.fashion_mnist, a.corpus)
                rc, lines, wall, err = run_runner(a.runner, cfg, d)
                start = [l for l in lines if l["kind"] == "start"]
                ok = rc == 0 and bool(start) and any(l["kind"] == "end" for l in lines)
                check(ok, f"{case['name']} {precision}: runner exit {rc}"
                          + ("" if ok else f" stderr: {err}"))
                if not ok:
                    continue
                check(start[0].get("device", "").startswith(DEVICE),
                      f"{case['name']} {precision}: trains on {start[0].get('device')}")
                rate, end = window_rate(lines, case["batch"], steps)
                base, base_loss = run_pytorch(case, precision, steps, a.fashion_mnist, a.corpus)
                steps_l = [l for l in lines if l["kind"] == "step"]
                first, last = steps_l[0]["loss"], end["final_loss"]
                check(last is not None and last < first,
                      f"{case['name']} {precision}: loss {first:.3f} -> {last}")
                row = {"row": f"{case['name']} {precision} batch {case['batch']}",
                       "value": rate, "baseline": base, "unit": "samples/s",
                       "ratio": rate / base, "runner_final_loss": last,
                       "pytorch_final_loss": base_loss, "steps": steps}
                if tokens:
                    row["tokens_per_s"] = rate * tokens
                    row["baseline_tokens_per_s"] = base * tokens
                if precision == "fp16":
                    row["loss_scale"] = steps_l[-1].get("loss_scale")
                    row["skipped_steps"] = steps_l[-1].get("skipped_steps")
                record(row)
                print(f"  {row['row']:34s} runner {rate:12.0f}/s  pytorch {base:12.0f}/s  "
                      f"{rate / base:5.2f}x" + (f"  {rate * tokens:.0f} tok/s" if tokens else ""),
                      flush=True)

    if "fp16" in parts and DEVICE == "cuda":  # the loss scaler exercised: a first scale that overflows
        case = CASES[0]
        d = os.path.join(work, "fp16-overflow")
        shutil.rmtree(d, ignore_errors=True)
        cfg = runner_config(case, "fp16", d, 100, a.fashion_mnist, a.corpus)
        # 1e10: the scaled gradients overflow float16 (max 65504) until about 14 halvings.
        rc, lines, _, err = run_runner(a.runner, cfg, d, {"BATCHLAB_LOSS_SCALE": "1e10"})
        steps_l = [l for l in lines if l["kind"] == "step"]
        check(rc == 0 and len(steps_l) == 100, f"fp16 overflow run: exit {rc} {err[-300:]}")
        if steps_l:
            skipped = steps_l[-1]["skipped_steps"]
            scales = [l["loss_scale"] for l in steps_l]
            check(skipped >= 1 and scales[-1] < scales[0],
                  f"fp16: {skipped} step(s) skipped, scale {scales[0]:g} -> {scales[-1]:g}")
            check(steps_l[-1]["loss"] < steps_l[0]["loss"],
                  f"fp16: still learns ({steps_l[0]['loss']:.3f} -> {steps_l[-1]['loss']:.3f})")
            record({"row": "fp16 loss scaling from 1e10", "skipped_steps": skipped,
                    "first_scale": scales[0], "last_scale": scales[-1],
                    "first_loss": steps_l[0]["loss"], "last_loss": steps_l[-1]["loss"]})

    if "resume" in parts:  # exact resume on the device
        case = CASES[0]
        d1, d2 = os.path.join(work, "resume-1"), os.path.join(work, "resume-2")
        for d in (d1, d2):
            shutil.rmtree(d, ignore_errors=True)
        extra = {"checkpoint": {"every_steps": 30}, "run_id": "gpu-resume"}
        rc1, l1, _, e1 = run_runner(a.runner, runner_config(case, "fp32", d1, 60, a.fashion_mnist,
                                                            a.corpus, extra), d1)
        os.makedirs(d2, exist_ok=True)
        with open(os.path.join(d2, "resume.json"), "w") as f:
            json.dump({"attempts": [{"attempt": 1, "dir": d1}]}, f)
        rc2, l2, _, e2 = run_runner(a.runner, runner_config(case, "fp32", d2, 60, a.fashion_mnist,
                                                            a.corpus, extra), d2)
        resumed = [l for l in l2 if l["kind"] == "resume"]
        a_losses = [l["loss"] for l in l1 if l["kind"] == "step" and l["step"] > 30]
        b_losses = [l["loss"] for l in l2 if l["kind"] == "step" and l["step"] > 30]
        check(rc1 == 0 and rc2 == 0 and resumed and resumed[0]["step"] == 30,
              f"resume: from step {resumed[0]['step'] if resumed else None} ({e1[-200:]}{e2[-200:]})")
        check(len(a_losses) == 30 and a_losses == b_losses,
              f"resume: steps 31-60 bit for bit ({sum(x == y for x, y in zip(a_losses, b_losses))}"
              f"/{len(a_losses)} equal)")
        record({"row": "resume on the GPU (mlp fp32, from step 30)",
                "equal_losses": sum(x == y for x, y in zip(a_losses, b_losses)),
                "of": len(a_losses)})

    if "study" in parts:  # the LM critical-batch grid of sweeps/lm_critical_batch.json, on the GPU
        spec = json.load(open(os.path.join(os.path.dirname(__file__), "..", "..", "sweeps",
                                           "lm_critical_batch.json")))
        base = spec["base"]
        t0 = time.time()
        for b in spec["axes"]["batch_size"]:
            for lr in spec["axes"]["lr.base"]:
                d = os.path.join(work, f"study-b{b}-lr{lr}")
                shutil.rmtree(d, ignore_errors=True)
                cfg = {"seed": 1, "batch_size": b, "data": {"name": "text", "path": a.corpus},
                       "model": base["model"], "optimizer": base["optimizer"],
                       "lr": {**base["lr"], "base": lr}, "budget": base["budget"],
                       "eval": base["eval"], "target": base["target"], "gns": base["gns"],
                       "threads": 1, "metrics_path": os.path.join(d, "metrics.jsonl")}
                rc, lines, wall, err = run_runner(a.runner, cfg, d)
                end = [l for l in lines if l["kind"] == "end"]
                gns = [l for l in lines if l["kind"] == "step" and "gns_sq_big" in l]
                row = {"row": f"lm study b={b} lr={lr}", "exit": rc, "wall_s": wall,
                       "outcome": end[0]["outcome"] if end else None,
                       "target_step": end[0]["target_step"] if end else None,
                       "target_seconds": end[0]["target_seconds"] if end else None,
                       "gns_measurements": len(gns)}
                # Like the study on the CPU, a large batch may run out of its sample budget.
                check(bool(end) and end[0]["outcome"] in ("target_reached", "budget_exhausted"),
                      f"lm study b={b} lr={lr}: exit {rc}, {end[0]['outcome'] if end else None} "
                      f"{err[-200:]}")
                record(row)
                print(f"  {row}", flush=True)
        record({"row": "lm study wall time (12 runs, one after another)",
                "value": time.time() - t0, "unit": "s"})
        print(f"  study wall {time.time() - t0:.1f} s", flush=True)

    print(f"# {len(FAILED)} check(s) failed" if FAILED else "# all checks passed", flush=True)
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()
