#!/usr/bin/python3
"""Per-run overhead and time to answer of real sweeps (issue 12 item 4), rows for bench/run.

  overhead  N short real runs (Fashion-MNIST MLP, a few steps) one after another on one slot,
            through `batchlab sweep run` with the real batchlab-runner. Per run:
              start overhead = the runner's `start` line time - the run's launch (runs.started_at)
              end overhead   = the run recorded (runs.ended_at) - (start time + the end line's
                               `seconds`, the runner's training time)
            Rows: cold (`--workers fresh`: a process per run) and, where the CLI has it, warm
            (`sweep run --workers reuse`: ranks kept alive across runs), medians with min-max;
            goal <= 0.3 s warm.
  answer    the time to answer of sweeps/critical_batch_scan.json (or, with --quick, a slice of
            it: 2 batch sizes x 2 LRs, 1 seed, 1 epoch): its wall time / (sum over runs of training
            seconds x ranks / slots); goal <= 1.2.

    /usr/bin/python3 bench/orchestrator/overhead_bench.py --build build [--what overhead|answer]
        [--quick] [--runs 8] [--slots 2] [--reuse auto|on|off|both]

Every row checks its runs: each must have finished with an end line (else exit 1).
"""
import argparse
import copy
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
import sweep_run  # noqa: E402  (bench/sweep_run.py: write the spec, run it, time it)

FINISHED = ("completed", "target_reached", "budget_exhausted", "diverged", "pruned")


def short_runs_spec(runs, name):
    return {
        "name": name,
        "base": {"data": {"name": "fashion-mnist"}, "model": {"name": "mlp", "hidden": [64]},
                 "optimizer": {"name": "momentum", "momentum": 0.9},
                 "lr": {"base": 0.05, "base_batch_size": 64, "rule": "none"},
                 "batch_size": 64, "budget": {"steps": 5}, "eval": {"every_steps": 0, "subset": 100},
                 "gns": {"every_steps": 0}, "threads": 1},
        "seeds": list(range(1, runs + 1)),
        "resources": {"retries": 0},
    }


def sweep(cli, runner, work, name, spec, slots, workers):
    """Runs `spec` to the end in a fresh database (`--workers reuse|fresh`); returns (wall
    seconds, database path)."""
    return sweep_run.run_sweep(cli, runner, work, name, spec, slots, workers, "overhead_bench")


def run_times(db):
    """Per finished run: (start overhead, end overhead, training seconds x world size)."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = con.execute(
        "SELECT r.id, r.state, r.started_at, r.ended_at, r.world_size, a.dir FROM runs r "
        "JOIN attempts a ON a.run_key = r.run_key AND a.attempt = r.attempt").fetchall()
    con.close()
    out = []
    for run_id, state, started, ended, world, folder in rows:
        if state not in FINISHED:
            raise SystemExit(f"overhead_bench: run {run_id} ended {state}")
        start_line = end_line = None
        with open(os.path.join(folder, "metrics.jsonl")) as f:
            for line in f:
                j = json.loads(line)
                if j.get("kind") == "start":
                    start_line = j
                elif j.get("kind") == "end":
                    end_line = j
        if start_line is None or end_line is None:
            if state == "pruned":
                continue  # stopped before it started or before its end line
            raise SystemExit(f"overhead_bench: run {run_id} has no start or end line")
        trained_until = start_line["time"] + end_line["seconds"]
        out.append((start_line["time"] - started, ended - trained_until,
                    end_line["seconds"] * (world or 1)))
    return out


def accepts_reuse(cli):
    done = subprocess.run([cli, "sweep", "run", "--help"], capture_output=True, text=True)
    return "--workers" in done.stdout


def overhead_row(label, per_run, reps_note):
    totals = [s + e for s, e, _ in per_run]
    return {"value": statistics.median(totals), "min": min(totals), "max": max(totals),
            "reps": len(totals), "unit": "s",
            "note": f"{label}: start median {statistics.median(s for s, _, _ in per_run):.3f} s, "
                    f"end median {statistics.median(e for _, e, _ in per_run):.3f} s; {reps_note}"}


def overhead(cli, runner, work, args):
    runs = args.runs
    note = f"{runs} runs of 5 steps (Fashion-MNIST MLP), one at a time"
    has_flag = accepts_reuse(cli)
    reuse = args.reuse in ("on", "both") or (args.reuse == "auto" and has_flag)
    cold = run_times(sweep(cli, runner, work, "cold", short_runs_spec(runs, "overhead-cold"), 1,
                           "fresh" if has_flag else None)[1])
    cold_row = overhead_row("cold", cold, note)
    print(json.dumps(dict(cold_row, row="per-run overhead, cold (launch -> first step, last step "
                                        "-> recorded)")), flush=True)
    if not reuse:
        return
    warm = run_times(sweep(cli, runner, work, "warm", short_runs_spec(runs, "overhead-warm"), 1,
                           "reuse")[1])
    row = overhead_row("warm", warm, note + "; the first run starts its worker")
    row.update(row="per-run overhead, warm (workers reused)", baseline=cold_row["value"],
               baseline_min=cold_row["min"], baseline_max=cold_row["max"],
               baseline_name="cold: a process per run", goal="<= 0.3 s median",
               ok=row["value"] <= 0.3)
    print(json.dumps(row), flush=True)


def answer(cli, runner, work, args):
    with open(os.path.join(ROOT, "sweeps", "critical_batch_scan.json")) as f:
        spec = json.load(f)
    spec.pop("$schema", None)
    what = "sweeps/critical_batch_scan.json"
    if args.quick:
        spec["axes"] = {"batch_size": [256, 1024], "lr.base": [0.1, 0.3]}
        spec["seeds"] = [1]
        spec["base"]["budget"] = {"epochs": 1}
        what += " (quick slice: B 256, 1024 x LR 0.1, 0.3, 1 seed, 1 epoch)"
    has_flag = accepts_reuse(cli)
    reuse = args.reuse in ("on", "both") or (args.reuse == "auto" and has_flag)
    variants = [("warm", True)] if reuse else [("cold", False)]
    if args.reuse == "both":
        variants.insert(0, ("cold", False))
    for label, warm in variants:
        workers = ("reuse" if warm else "fresh") if has_flag else None
        wall, db = sweep(cli, runner, work, "answer-" + label, copy.deepcopy(spec), args.slots,
                         workers)
        per_run = run_times(db)
        trained = sum(t for _, _, t in per_run) / args.slots
        print(json.dumps({
            "row": f"time to answer, {'quick slice' if args.quick else 'critical_batch_scan'}"
                   f" ({label})",
            "value": wall, "baseline": trained, "unit": "s",
            "baseline_name": f"training seconds x ranks / slots ({args.slots})",
            "ratio": wall / trained, "reps": 1, "goal": "ratio <= 1.2", "ok": wall <= 1.2 * trained,
            "note": f"{what}: {len(per_run)} runs trained; median overhead per run "
                    f"{statistics.median(s + e for s, e, _ in per_run):.2f} s"}), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--what", choices=["overhead", "answer"], default="overhead")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--slots", type=int, default=2)
    ap.add_argument("--reuse", choices=["auto", "on", "off", "both"], default="auto")
    args = ap.parse_args()
    cli, runner = sweep_run.tools(args.build)
    with tempfile.TemporaryDirectory(prefix="overhead-bench-") as work:
        (overhead if args.what == "overhead" else answer)(cli, runner, work, args)


if __name__ == "__main__":
    main()
