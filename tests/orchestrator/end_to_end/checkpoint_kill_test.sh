#!/usr/bin/env bash
# kill -9 of the orchestrator during a small language-model study with the real batchlab-runner
# (label fault; docs/protocol.md, "Checkpoints"). Each kill lands mid-run; the next
# `batchlab sweep run` stops what the dead orchestrator left running (SIGTERM: the runner
# checkpoints at its next step and exits 7) and resumes every run from its newest valid
# checkpoint. At the end every run must read as one continuous series (each step once, no gap)
# whose loss at every step equals the uninterrupted study's, bit for bit; the steps trained twice
# (step lines written by all attempts minus the steps of the study) are at most one checkpoint
# interval per interrupted attempt.
# Usage: checkpoint_kill_test.sh BATCHLAB RUNNER WORKDIR FIGURES_DIR
set -uo pipefail
batchlab=$1 runner=$2 work=$3 figures=$4
kills=3 interval=10 steps=150
rm -rf "$work"
mkdir -p "$work" "$figures"
cat > "$work/spec.json" <<JSON
{"name": "ckpt-kill",
 "base": {"data": {"name": "text"},
          "model": {"name": "transformer", "layers": 2, "width": 64, "heads": 4, "context": 64},
          "optimizer": {"name": "adamw", "weight_decay": 0.1},
          "lr": {"base": 0.002, "warmup_steps": 10, "schedule": "cosine"},
          "budget": {"steps": $steps}, "eval": {"every_steps": 25, "subset": 64},
          "gns": {"every_steps": 5}, "threads": 1,
          "checkpoint": {"every_steps": $interval, "every_seconds": 0}},
 "axes": {"batch_size": [8, 16], "nodes": [1, 2]},
 "resources": {"retries": 0}}
JSON
sweep() {  # sweep NAME: batchlab sweep run into NAME.db / NAME-runs (exec: $! is batchlab's pid)
  exec "$batchlab" --db "$work/$1.db" sweep run "$work/spec.json" --runs-dir "$work/$1-runs" \
    --runner "$runner" --slots 2
}

start=$(date +%s)
(sweep reference) > "$work/reference.log" 2>&1 || { echo "FAIL: the reference study failed"; tail "$work/reference.log"; exit 1; }
reference_seconds=$(( $(date +%s) - start ))

for k in $(seq 1 $kills); do
  (sweep killed) > "$work/kill-$k.log" 2>&1 &
  orchestrator=$!
  # Until a checkpoint of this round exists, then a little later each round.
  before=$(find "$work/killed-runs" -name '*.ckpt' 2>/dev/null | wc -l)
  for _ in $(seq 1 400); do
    (( $(find "$work/killed-runs" -name '*.ckpt' 2>/dev/null | wc -l) > before )) && break
    sleep 0.05
  done
  sleep "0.$((3 * k))"
  kill -9 $orchestrator
  wait $orchestrator 2>/dev/null
done
(sweep killed) > "$work/final.log" 2>&1 || { echo "FAIL: the resumed study failed"; tail "$work/final.log"; exit 1; }

# Orphans: any process still tagged with an attempt folder of the killed study.
orphans=0
for p in /proc/[0-9]*; do
  grep -qz "BATCHLAB_ATTEMPT_DIR=$work/killed-runs" "$p/environ" 2>/dev/null && orphans=$((orphans + 1))
done

/usr/bin/python3 - "$work" "$steps" "$interval" "$kills" "$orphans" "$figures" <<'PY'
import glob, json, os, sqlite3, sys
work, steps, interval, kills, orphans, figures = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
def series(db):
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    out = {}
    for run, state in c.execute("SELECT run_id, state FROM run_summary"):
        rows = c.execute("SELECT step, value FROM run_metrics WHERE run_id = ? AND name = 'loss' "
                         "ORDER BY seq", (run,)).fetchall()
        out[run] = (state, rows)
    attempts = c.execute("SELECT count(*) FROM attempts").fetchone()[0]
    resumes = [m for (m,) in c.execute("SELECT message FROM events WHERE kind = 'resume'")]
    return out, attempts, resumes
ref, _, _ = series(f"{work}/reference.db")
got, attempts, resumes = series(f"{work}/killed.db")
failures = []
finished = sum(1 for s, _ in got.values() if s == "completed")
lost = len(ref) - finished
for run, (state, rows) in ref.items():
    if run not in got:
        failures.append(f"run {run} missing"); continue
    gstate, grows = got[run]
    if [s for s, _ in grows] != list(range(1, steps + 1)):
        failures.append(f"run {run}: steps are not 1..{steps} once each "
                        f"({len(grows)} lines, first {grows[:2]}, duplicates or gaps)")
    elif grows != rows:
        diff = next(i for i, (a, b) in enumerate(zip(grows, rows)) if a != b)
        failures.append(f"run {run}: loss at step {diff + 1} is {grows[diff][1]!r}, uninterrupted {rows[diff][1]!r}")
trained = 0
for path in glob.glob(f"{work}/killed-runs/**/metrics.jsonl", recursive=True):
    for line in open(path):
        try:
            trained += json.loads(line).get("kind") == "step"
        except ValueError:
            pass  # a line cut by the kill
twice = trained - steps * len(ref)
interrupted = attempts - len(ref)
bound = interval * interrupted
duplicated = len(got) - len(ref)
line = (f"killed {kills}x (LM study, {len(ref)} runs, checkpoint every {interval} steps): "
        f"runs {finished}/{len(ref)} finished, {lost} lost, {duplicated} duplicated, {orphans} orphans, "
        f"steps trained twice: {twice} (<= checkpoint interval x interrupted attempts = {bound}); "
        f"{len(resumes)} resumes, losses at every step equal to the uninterrupted study's: "
        f"{'yes' if not failures else 'NO'}")
print(line)
os.makedirs(figures, exist_ok=True)
open(f"{figures}/CheckpointKill9.txt", "w").write(line + "\n")
if lost or duplicated or orphans: failures.append("lost, duplicated or orphaned runs")
if twice > bound: failures.append(f"{twice} steps trained twice, over the bound {bound}")
if interrupted > 0 and not resumes: failures.append("no attempt resumed from a checkpoint")
for f in failures: print("FAIL", f)
sys.exit(1 if failures else 0)
PY
