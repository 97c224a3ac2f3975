#!/usr/bin/env python3
"""bench/runner/placement_bench.py: what pinning ranks to cores is worth. The same 2-rank
batchlab-runner run launched the two ways the local backend launches it (docs/spec.md,
"Placement"): `mpirun --bind-to core` (the run owns the cores) against `--bind-to none` (the
baseline: ranks float, as when runs share the machine). Samples/s from the end line's `samples`
and `seconds`, medians of --repeat interleaved pairs, min-max beside them.

    python3 bench/runner/placement_bench.py --runner build/runner/batchlab-runner [--repeat 5]
        [--json] [--quick]
"""
import argparse
import json
import os
import subprocess
import tempfile
from statistics import median

HERE = os.path.dirname(os.path.abspath(__file__))
MPIRUN = ["mpirun", "--allow-run-as-root"]
BINDINGS = {"bound": ["--bind-to", "core"], "unbound": ["--bind-to", "none"]}
CASES = [("mlp", 256, 300), ("cnn", 64, 60)]  # (model, global batch, steps)


def run(runner, binding, model, batch, steps, tmp):
    metrics = os.path.join(tmp, "metrics.jsonl")
    config = {
        "seed": 1, "nodes": 2, "batch_size": batch, "data": {"name": "fashion-mnist"},
        "model": {"name": model, "hidden": [128]},
        "optimizer": {"name": "momentum", "momentum": 0.9},
        "lr": {"base": 0.05, "rule": "none"}, "budget": {"steps": steps},
        "eval": {"every_steps": 0, "subset": 100}, "gns": {"every_steps": 0},
        "comm": {"backend": "mpi"}, "threads": 1, "metrics_path": metrics,
    }
    path = os.path.join(tmp, "config.json")
    with open(path, "w") as f:
        json.dump(config, f)
    subprocess.run(MPIRUN + BINDINGS[binding] + ["-np", "2", runner, "--config", path],
                   check=True, capture_output=True)
    with open(metrics) as f:
        end = [json.loads(line) for line in f][-1]
    assert end["kind"] == "end" and end["steps"] == steps, end  # it ran every step
    return end["samples"] / end["seconds"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runner", default=os.path.join(HERE, "../../build/runner/batchlab-runner"))
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quick", action="store_true", help="a quarter of the steps, one pair")
    args = ap.parse_args()
    if args.quick:
        args.repeat = 1
    print(f"{'model':5} {'batch':>5} {'bound':>9} {'unbound':>9} {'ratio':>6}   (samples/s, 2 ranks)")
    with tempfile.TemporaryDirectory() as tmp:
        for model, batch, steps in CASES:
            if args.quick:
                steps = max(20, steps // 4)
            got = {"bound": [], "unbound": []}
            for _ in range(args.repeat):  # interleaved: both see the same machine load
                for binding in got:
                    got[binding].append(run(args.runner, binding, model, batch, steps, tmp))
            b, u = median(got["bound"]), median(got["unbound"])
            print(f"{model:5} {batch:5d} {b:9.0f} {u:9.0f} {b / u:6.2f}", flush=True)
            if args.json:
                print(json.dumps({
                    "row": f"ranks pinned to cores, {model} batch {batch}, 2 ranks",
                    "value": round(b), "min": round(min(got["bound"])),
                    "max": round(max(got["bound"])), "baseline": round(u),
                    "baseline_min": round(min(got["unbound"])),
                    "baseline_max": round(max(got["unbound"])), "unit": "samples/s",
                    "baseline_name": "mpirun --bind-to none", "reps": args.repeat,
                    "note": f"mpirun --bind-to core, {steps} steps"}), flush=True)


if __name__ == "__main__":
    main()
