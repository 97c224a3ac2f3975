"""The one way the Python benchmarks run a study (bench/prune, bench/orchestrator).

write its spec, `batchlab sweep run` it with the real batchlab-runner into a fresh database in
`work`, and time it:

    import sweep_run  # after sys.path.insert(0, <bench/>)
    cli, runner = sweep_run.tools("build")
    wall, db = sweep_run.run_sweep(cli, runner, work, "grid", spec, slots=2)

A sweep that exits non-zero ends the benchmark (exit 1, the tail of its stderr shown).
"""
import json
import os
import subprocess
import sys
import time


def tools(build):
    """(cli, runner): absolute paths of `batchlab` and `batchlab-runner` under the build folder."""
    return (os.path.abspath(os.path.join(build, "cli", "batchlab")),
            os.path.abspath(os.path.join(build, "runner", "batchlab-runner")))


def run_sweep(cli, runner, work, name, spec, slots, workers=None, who="bench"):
    """Writes `spec` to <work>/<name>.json, runs it to the end into <work>/<name>.db (attempt
    folders under <work>/runs-<name>; `--workers reuse|fresh` when `workers` is given) and returns
    (wall seconds, database path). `who` names the benchmark in the error message."""
    path = os.path.join(work, name + ".json")
    with open(path, "w") as f:
        json.dump(spec, f)
    db = os.path.join(work, name + ".db")
    command = [cli, "--db", db, "sweep", "run", path, "--runs-dir",
               os.path.join(work, "runs-" + name), "--runner", runner, "--slots", str(slots)]
    if workers:
        command += ["--workers", workers]
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.monotonic() - start
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-3000:])
        raise SystemExit(f"{who}: sweep {name} exited {done.returncode}")
    return wall, db
