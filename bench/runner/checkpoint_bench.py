#!/usr/bin/env python3
"""Checkpoint cost (docs/protocol.md, "Checkpoints"): for the MLP, the CNN and the transformer LM
on one rank, the time to write one checkpoint against the step time, and its share of training
time at the default interval (checkpoint.every_seconds = 60) and at one every 100 steps; then the
time from process start to the first trained step when resuming from a checkpoint, against a
cold start. Each row's baseline is measured in the same run. Prints bench/run rows (bench/README.md).

    bench/runner/checkpoint_bench.py --runner build/runner/batchlab-runner [--quick]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

MODELS = {
    "mlp": {"data": {"name": "fashion-mnist", "samples": 8192, "test_samples": 512},
            "model": {"name": "mlp", "hidden": [256, 256]}, "batch_size": 64},
    "cnn": {"data": {"name": "fashion-mnist", "samples": 8192, "test_samples": 512},
            "model": {"name": "cnn", "channels": [16, 32], "hidden": [128]}, "batch_size": 64},
    "lm": {"data": {"name": "text"},
           "model": {"name": "transformer", "layers": 2, "width": 128, "heads": 4, "context": 64},
           "batch_size": 16},
}
DEFAULT_INTERVAL_SECONDS = 60.0


def config(dirname, model, steps, checkpoint):
    c = {"run_id": "00000000000b0b0b", "seed": 1, "optimizer": {"name": "adamw"},
         "lr": {"base": 0.001}, "budget": {"steps": steps}, "eval": {"every_steps": 0, "subset": 64},
         "gns": {"every_steps": 0}, "threads": 1, "checkpoint": checkpoint,
         "metrics_path": os.path.join(dirname, "metrics.jsonl")}
    c.update(json.loads(json.dumps(MODELS[model])))
    os.makedirs(dirname, exist_ok=True)
    with open(os.path.join(dirname, "config.json"), "w") as f:
        json.dump(c, f)


def run(runner, dirname):
    start = time.monotonic()
    subprocess.run([runner, "--config", os.path.join(dirname, "config.json")], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.monotonic() - start
    with open(os.path.join(dirname, "metrics.jsonl")) as f:
        lines = [json.loads(x) for x in f]
    return wall, lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runner", required=True)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    steps = 12 if args.quick else 60
    work = tempfile.mkdtemp(prefix="batchlab-ckpt-bench-")
    try:
        for model in MODELS:
            # Step time without checkpoints; then a checkpoint every 5 steps for the write time.
            plain = os.path.join(work, model + "-plain")
            config(plain, model, steps, {"every_steps": 0, "every_seconds": 0})
            _, lines = run(args.runner, plain)
            step = statistics.median(l["step_seconds"] for l in lines if l["kind"] == "step")
            saving = os.path.join(work, model + "-saving")
            config(saving, model, steps, {"every_steps": 5, "every_seconds": 0, "keep": 2})
            _, lines = run(args.runner, saving)
            writes = [l["checkpoint_seconds"] for l in lines if l["kind"] == "checkpoint"]
            size = [l["checkpoint_bytes"] for l in lines if l["kind"] == "checkpoint"][-1]
            write = statistics.median(writes)
            share_default = write / DEFAULT_INTERVAL_SECONDS
            share_100 = write / (100 * step)
            print(json.dumps({
                "row": f"checkpoint write, {model} (1 rank)", "value": write, "unit": "s",
                "baseline": step, "baseline_name": "one training step", "reps": len(writes),
                "min": min(writes), "max": max(writes),
                "note": f"{size / 1e6:.2f} MB per shard"}))
            print(json.dumps({
                "row": f"checkpoint cost at the default interval (60 s), {model}",
                "value": 100 * share_default, "unit": "% of training time",
                "goal": "<= 2 %", "ok": share_default <= 0.02,
                "note": f"every 100 steps: {100 * share_100:.2f} %"}))
            # Resume: process start to the end of the run, from the newest checkpoint (the
            # same config: the checkpoint section is not part of it), against a cold start that
            # trains as many steps.
            last = max(l["step"] for l in lines if l["kind"] == "checkpoint")
            cold = os.path.join(work, model + "-cold")
            config(cold, model, steps - last, {"every_steps": 0, "every_seconds": 0})
            cold_walls = [run(args.runner, cold)[0] for _ in range(1 if args.quick else 3)]
            resumed = os.path.join(work, model + "-resumed")
            config(resumed, model, steps, {"every_steps": 0, "every_seconds": 0})
            with open(os.path.join(resumed, "resume.json"), "w") as f:
                json.dump({"attempts": [{"attempt": 1, "dir": saving}]}, f)
            walls = []
            for _ in range(1 if args.quick else 3):
                wall, rlines = run(args.runner, resumed)
                assert rlines[0]["kind"] == "resume" and rlines[0]["step"] == last, rlines[0]
                walls.append(wall)
            print(json.dumps({
                "row": f"resume and train to the end, {model}", "value": statistics.median(walls),
                "unit": "s", "baseline": statistics.median(cold_walls),
                "baseline_name": "cold start to the first step", "min": min(walls),
                "max": max(walls), "baseline_min": min(cold_walls),
                "baseline_max": max(cold_walls),
                "note": f"from step {last}; both train {steps - last} steps"}))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
