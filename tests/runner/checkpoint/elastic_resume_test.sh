#!/usr/bin/env bash
# Elastic resume (docs/protocol.md, "Elastic resume"; issue 35): a checkpoint written by K ranks
# goes on at K' ranks. For each case (MLP with momentum, CNN with AdamW, transformer with AdamW;
# gradient accumulation 2 throughout) the real batchlab-runner under mpirun:
#   full     2 ranks, steps 1..12 uninterrupted;
#   at 4     4 ranks from full's checkpoint at step 4 (written by 2), steps 5..12;
#   at 1     1 rank from the 4-rank checkpoint at step 8, steps 9..12.
# Checks: each resume line names the step and the rank count that wrote it; every step 5..12
# trained on the same global batch as the uninterrupted run, so its loss equals full's within the
# reduction order (relative difference < 1e-5; the largest per case is printed, docs/protocol.md
# states them); local_sgd (checkpointed where the ranks have just averaged) re-shards; async_ps and
# backup refuse to (exit 2, the message names nodes and the mode).
# Usage: elastic_resume_test.sh MPIRUN RUNNER WORKDIR
set -uo pipefail
mpirun=$1 runner=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
run() {  # run DIR RANKS
  "$mpirun" --allow-run-as-root --oversubscribe --bind-to none -np "$2" "$runner" \
    --config "$1/config.json" > "$1/out.log" 2>&1
}
config() {  # config DIR NODES MODEL_AND_DATA OPTIMIZER [COMM]
  mkdir -p "$1"
  cat > "$1/config.json" <<JSON
{"run_id": "00000000000000e1", "seed": 4, "nodes": $2, "batch_size": 16, "accumulation": 2,
 $3, "optimizer": $4, "lr": {"base": 0.01, "warmup_steps": 2}, "budget": {"steps": 12},
 "eval": {"every_steps": 0}, "gns": {"every_steps": 0}, "comm": ${5:-{\}},
 "checkpoint": {"at_steps": [4, 8], "every_steps": 0, "every_seconds": 0, "keep": 1},
 "metrics_path": "$1/metrics.jsonl"}
JSON
}
resume_from() {  # resume_from DIR EARLIER STEP: EARLIER's checkpoint at STEP alone
  mkdir -p "$1/from/checkpoints"
  cp "$2"/checkpoints/step-$(printf %08d "$3").rank-*.ckpt "$1/from/checkpoints/"
  echo "{\"attempts\": [{\"attempt\": 1, \"dir\": \"$1/from\"}]}" > "$1/resume.json"
}
compare() {  # compare NAME FULL RESUMED FROM TO WORLD_FROM: prints the largest relative difference
  /usr/bin/python3 - "$@" <<'PY'
import json, sys
name, full, resumed, lo, hi, world_from = sys.argv[1:]
lo, hi = int(lo), int(hi)
def lines(d):
    return [json.loads(l) for l in open(d + "/metrics.jsonl")]
ref = {l["step"]: l["loss"] for l in lines(full) if l["kind"] == "step"}
got = lines(resumed)
first = got[0]
bad = []
if first["kind"] != "resume" or first["step"] != lo or first.get("from_world_size") != int(world_from):
    bad.append(f"first line is not a resume from step {lo} written by {world_from} ranks: {first}")
steps = {l["step"]: l["loss"] for l in got if l["kind"] == "step"}
if sorted(steps) != list(range(lo + 1, hi + 1)):
    bad.append(f"steps {sorted(steps)}, not {lo + 1}..{hi}")
rel = [abs(steps[s] - ref[s]) / abs(ref[s]) for s in sorted(steps) if s in ref]
worst = max(rel) if rel else float("inf")
if worst >= 1e-5:
    bad.append(f"largest relative loss difference {worst:.3g} >= 1e-5")
print(f"{name}: steps {lo + 1}..{hi} relative loss difference per step " +
      " ".join(f"{r:.2g}" for r in rel) + f"; largest {worst:.3g}")
for b in bad:
    print(f"FAIL {name}: {b}")
sys.exit(1 if bad else 0)
PY
}

mlp='"data": {"name": "fashion-mnist", "samples": 256, "test_samples": 64}, "model": {"name": "mlp", "hidden": [16]}'
cnn='"data": {"name": "fashion-mnist", "samples": 256, "test_samples": 64}, "model": {"name": "cnn", "channels": [4, 8], "hidden": [16]}'
lm='"data": {"name": "text"}, "model": {"name": "transformer", "layers": 1, "width": 16, "heads": 2, "context": 16}'
momentum='{"name": "momentum", "momentum": 0.9}'
adamw='{"name": "adamw", "weight_decay": 0.1}'
declare -A model=([mlp-momentum]=$mlp [cnn-adamw]=$cnn [transformer-adamw]=$lm)
declare -A optim=([mlp-momentum]=$momentum [cnn-adamw]=$adamw [transformer-adamw]=$adamw)
for case in mlp-momentum cnn-adamw transformer-adamw; do
  full=$work/$case-full at4=$work/$case-at4 at1=$work/$case-at1
  config "$full" 2 "${model[$case]}" "${optim[$case]}"
  config "$at4" 4 "${model[$case]}" "${optim[$case]}"
  config "$at1" 1 "${model[$case]}" "${optim[$case]}"
  run "$full" 2 || { fail "$case: the 2-rank run failed: $(tail -3 "$full/out.log")"; continue; }
  resume_from "$at4" "$full" 4
  run "$at4" 4 || { fail "$case: 2 -> 4 failed: $(tail -3 "$at4/out.log")"; continue; }
  resume_from "$at1" "$at4" 8
  run "$at1" 1 || { fail "$case: 4 -> 1 failed: $(tail -3 "$at1/out.log")"; continue; }
  compare "$case 2->4" "$full" "$at4" 4 12 2 || failures=$((failures + 1))
  compare "$case 4->1" "$full" "$at1" 8 12 4 || failures=$((failures + 1))
done

# local_sgd checkpoints only where the ranks have just averaged (equal parameters): it re-shards.
# async_ps and backup keep a server's and workers' states: they refuse (exit 2, nodes and the mode).
for mode in local_sgd async_ps backup; do
  first=$work/$mode-2 second=$work/$mode-4
  comm="{\"sync\": \"$mode\", \"sync_every\": 2, \"backup_workers\": 0}"
  config "$first" 2 "$mlp" "$momentum" "$comm"
  config "$second" 4 "$mlp" "$momentum" "$comm"
  sed -i 's/"accumulation": 2/"accumulation": 1/; s/"budget": {"steps": 12}/"budget": {"steps": 5}/' \
    "$first/config.json" "$second/config.json"
  run "$first" 2 || { fail "$mode: the 2-rank run failed: $(tail -3 "$first/out.log")"; continue; }
  resume_from "$second" "$first" 4
  run "$second" 4
  rc=$?
  if [[ $mode == local_sgd ]]; then
    ((rc == 0)) || fail "$mode: 2 -> 4 exited $rc: $(tail -3 "$second/out.log")"
    head -1 "$second/metrics.jsonl" | grep -q '"kind":"resume","step":4,.*"from_world_size":2' ||
      fail "$mode: not a resume from step 4 of 2 ranks: $(head -1 "$second/metrics.jsonl")"
    ((rc == 0)) && echo "ok $mode: re-shards 2 -> 4 at an average"
    continue
  fi
  ((rc == 2)) || fail "$mode: resuming a 2-rank checkpoint at 4 ranks exited $rc, not 2"
  grep -q "nodes: .*comm.sync \"$mode\"" "$second/out.log" ||
    fail "$mode: the refusal does not name nodes and the mode: $(tail -2 "$second/out.log")"
  ((rc == 2)) && echo "ok $mode: refuses to re-shard ($(grep -o 'nodes: .*' "$second/out.log" | head -1))"
done
# Checkpoint format 1 (one data shard per rank; tests/runner/checkpoint/fixtures/checkpoint_format1, written
# by the runner before format 2): at the 2 ranks that wrote it, it loads and steps 7..12 (the rest
# of its epoch) read the rows the old run read, so their losses are the old run's; it runs to the
# end. At 1 rank it is rejected with the reason (format 1 does not re-shard), and the run starts
# from step 0.
fixture=$(dirname "$0")/fixtures/checkpoint_format1
for ranks in 2 1; do
  d=$work/format1-at$ranks
  mkdir -p "$d/from/checkpoints"
  cp "$fixture"/*.ckpt "$d/from/checkpoints/"
  /usr/bin/python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); c["nodes"] = int(sys.argv[3])
c["metrics_path"] = sys.argv[2] + "/metrics.jsonl"; json.dump(c, open(sys.argv[2] + "/config.json", "w"))' \
    "$fixture/config.json" "$d" "$ranks"
  echo "{\"attempts\": [{\"attempt\": 1, \"dir\": \"$d/from\"}]}" > "$d/resume.json"
  run "$d" "$ranks" || { fail "format 1 at $ranks: the run failed: $(tail -3 "$d/out.log")"; continue; }
  /usr/bin/python3 - "$d/metrics.jsonl" "$fixture/losses.txt" "$ranks" <<'PY' || failures=$((failures + 1))
import json, sys
got = [json.loads(l) for l in open(sys.argv[1])]
old = {int(s): float(v) for s, v in (l.split() for l in open(sys.argv[2]))}
steps = {l["step"]: l["loss"] for l in got if l["kind"] == "step"}
bad = []
if sys.argv[3] == "2":
    if got[0]["kind"] != "resume" or got[0]["step"] != 6 or got[0]["rejected"]:
        bad.append(f"not a resume from step 6: {got[0]}")
    rel = [abs(steps[s] - old[s]) / abs(old[s]) for s in range(7, 13)]
    if max(rel) >= 1e-6:
        bad.append(f"steps 7..12 differ from the format-1 run's: relative {rel}")
    if sorted(steps) != list(range(7, 21)):
        bad.append(f"steps {sorted(steps)}, not 7..20")
    print(f"format 1 at 2 ranks: resumed at step 6, steps 7..12 relative loss difference to the "
          f"old run {max(rel):.3g}")
else:
    reasons = " ".join(r["reason"] for r in got[0].get("rejected", []))
    if got[0]["kind"] != "resume" or got[0]["step"] != 0 or "format 1" not in reasons:
        bad.append(f"not rejected for its format: {got[0]}")
    print(f"format 1 at 1 rank: rejected ({reasons})")
if got[-1]["kind"] != "end" or got[-1]["outcome"] != "completed":
    bad.append(f"no completed end line: {got[-1]}")
for b in bad:
    print(f"FAIL format 1 at {sys.argv[3]} ranks: {b}")
sys.exit(1 if bad else 0)
PY
done
if ((failures > 0)); then
  echo "$failures failure(s)"
  exit 1
fi
echo "all elastic resume checks passed"
