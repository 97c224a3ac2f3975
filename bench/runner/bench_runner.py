#!/usr/bin/env python3
"""bench/runner: batchlab-runner against the equivalent PyTorch script (ddp_baseline.py: DDP over
gloo for 2 ranks, a plain module for 1), same model, global batch, steps, threads and data
(Fashion-MNIST), 1 and 2 ranks, MLP and CNN. Both are launched with the same mpirun line and timed
over the same window: from before the first step to after a final evaluation on 100 test samples
(the runner: `seconds` of its end line; the baseline times the same window itself). Prints samples/s of both (medians of --repeat interleaved runs) and their ratio.

    python3 bench/runner/bench_runner.py --runner build/runner/batchlab-runner [--repeat 3]
        [--json] [--quick]

--json adds one JSON line per case for bench/run ({"row", "value", "baseline", "unit", ...}:
value = the runner's median samples/s (its better backend at 2 ranks) with min-max, baseline =
PyTorch's); --quick runs a quarter of the steps (at least 60), once.

Needs python3-torch (benchmark only).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from statistics import median

HERE = os.path.dirname(os.path.abspath(__file__))
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none"]

CASES = [  # (model, global batch, steps)
    ("mlp", 64, 800),
    ("mlp", 256, 300),
    ("cnn", 64, 60),
]


def run_runner(runner, model, batch, steps, ranks, threads, tmp, backend):
    config = {
        "seed": 1, "nodes": ranks, "batch_size": batch,
        "data": {"name": "fashion-mnist"},
        "model": {"name": model, "hidden": [128], **({"channels": [16, 32]} if model == "cnn" else {})},
        "optimizer": {"name": "momentum", "momentum": 0.9},
        "lr": {"base": 0.05, "base_batch_size": batch, "rule": "none"},
        "budget": {"steps": steps}, "eval": {"every_steps": 0, "subset": 100},
        "gns": {"every_steps": 0}, "comm": {"backend": backend}, "threads": threads,
        "metrics_path": os.path.join(tmp, "metrics.jsonl"),
    }
    path = os.path.join(tmp, "config.json")
    with open(path, "w") as f:
        json.dump(config, f)
    subprocess.run(MPIRUN + ["-np", str(ranks), runner, "--config", path], check=True)
    with open(config["metrics_path"]) as f:
        end = [json.loads(line) for line in f][-1]
    # The benchmark checks its result: the run finished every step and learned something.
    assert end["kind"] == "end" and end["steps"] == steps, end
    assert end["final_loss"] < 1.5 and end["final_test_accuracy"] > 0.3, end
    return end["samples"] / end["seconds"]


def run_baseline(model, batch, steps, ranks, threads, tmp):
    store = os.path.join(tmp, "store")
    if os.path.exists(store):
        os.remove(store)
    out = subprocess.run(
        MPIRUN + ["-np", str(ranks), sys.executable, os.path.join(HERE, "ddp_baseline.py"),
                  "--model", model, "--batch", str(batch), "--steps", str(steps),
                  "--threads", str(threads), "--store", store],
        check=True, capture_output=True, text=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    assert result["final_loss"] < 1.5, result  # the baseline trained too
    return result["samples_per_second"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runner", default=os.path.join(HERE, "../../build/runner/batchlab-runner"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="also print one JSON row per case")
    ap.add_argument("--quick", action="store_true", help="a quarter of the steps, one repeat")
    args = ap.parse_args()
    if args.quick:
        args.repeat = 1
    print(f"{'model':5} {'batch':>5} {'ranks':>5} {'steps':>5} {'runner mpi':>11} {'runner gloo':>11} "
          f"{'pytorch':>9} {'ratio mpi':>9} {'ratio gloo':>10}   (samples/s)")
    with tempfile.TemporaryDirectory() as tmp:
        for model, batch, steps in CASES:
            if args.quick:
                steps = max(60, steps // 4)  # the CNN needs its 60 steps to pass the check
            for ranks in (1, 2):
                mpi, gloo, theirs = [], [], []
                for _ in range(args.repeat):  # interleaved, so all see the same machine load
                    mpi.append(run_runner(args.runner, model, batch, steps, ranks, args.threads,
                                          tmp, "mpi"))
                    if ranks > 1:
                        gloo.append(run_runner(args.runner, model, batch, steps, ranks,
                                               args.threads, tmp, "gloo"))
                    theirs.append(run_baseline(model, batch, steps, ranks, args.threads, tmp))
                if ranks == 1:
                    gloo = mpi  # one rank communicates with nobody: the backend is not used
                m, g, t = median(mpi), median(gloo), median(theirs)
                print(f"{model:5} {batch:5d} {ranks:5d} {steps:5d} {m:11.0f} {g:11.0f} "
                      f"{t:9.0f} {m / t:9.2f} {g / t:10.2f}", flush=True)
                if args.json:
                    best, backend = (mpi, "mpi") if m >= g else (gloo, "gloo")
                    print(json.dumps({
                        "row": f"runner vs PyTorch DDP (gloo), {model} batch {batch}, {ranks} rank(s)",
                        "value": round(median(best)), "min": round(min(best)),
                        "max": round(max(best)), "baseline": round(t),
                        "baseline_min": round(min(theirs)), "baseline_max": round(max(theirs)),
                        "unit": "samples/s",
                        "baseline_name": "PyTorch " + ("DDP over gloo" if ranks > 1 else "plain module"),
                        "reps": args.repeat, "goal": ">= 1.2x", "ok": median(best) >= 1.2 * t,
                        "note": f"runner backend {backend} (the better median), {steps} steps"}),
                          flush=True)

if __name__ == "__main__":
    main()
