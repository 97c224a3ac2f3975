#!/usr/bin/env bash
# Two ranks of the real batchlab-runner under mpirun (docs/protocol.md, "Checkpoints"), for each
# collective sync mode (allreduce with gradient buckets, lag, local_sgd):
#   1. resumed from the checkpoint of a chosen step, the run ends with both ranks' parameters
#      equal byte for byte to the uninterrupted run's, and the same loss at every step after it;
#   2. every rank SIGKILLed mid-run (between steps or during a checkpoint write, wherever it
#      lands), a new attempt resumes from the newest checkpoint whose shards all load, and ends
#      the same, byte for byte.
# And the C++ example workload (examples/cpp-workload: a model registered outside runner/, in
# its own executable) resumed from a chosen step the same way.
# Usage: checkpoint_2ranks_test.sh MPIRUN RUNNER WORKDIR [EXAMPLE_RUNNER]
set -uo pipefail
mpirun=$1 runner=$2 work=$3 example=${4:-}
rm -rf "$work"
mkdir -p "$work"
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
run() {  # run DIR: trains DIR/config.json on 2 ranks, dumping DIR/params.rank{0,1}
  "$mpirun" --allow-run-as-root --oversubscribe --bind-to none -np 2 "${RUNNER_BIN:-$runner}" \
    --config "$1/config.json" --dump-params "$1/params" > "$1/out.log" 2>&1
}
config() {  # config DIR MODE STEPS
  mkdir -p "$1"
  cat > "$1/config.json" <<JSON
{"run_id": "00000000000000cc", "seed": 3, "nodes": 2, "batch_size": 64,
 "data": {"name": "fashion-mnist", "samples": 4096, "test_samples": 512},
 "model": {"name": "mlp", "hidden": [32]}, "optimizer": {"name": "adam"},
 "lr": {"base": 0.003, "warmup_steps": 4}, "budget": {"steps": $3},
 "eval": {"every_steps": 5}, "gns": {"every_steps": 2},
 "comm": {"sync": "$2", "sync_every": 2, "bucket_mb": 0.05},
 "checkpoint": {"every_steps": 1, "every_seconds": 0, "keep": 1000},
 "metrics_path": "$1/metrics.jsonl"}
JSON
}
losses() {  # losses METRICS FROM_STEP: "step loss" per step line after FROM_STEP
  /usr/bin/python3 -c '
import json, sys
for line in open(sys.argv[1]):
    l = json.loads(line)
    if l["kind"] == "step" and l["step"] > int(sys.argv[2]):
        print(l["step"], repr(l["loss"]))' "$1" "$2"
}
same_end() {  # same_end WHAT FULL RESUMED FROM_STEP
  for r in 0 1; do
    cmp -s "$2/params.rank$r" "$3/params.rank$r" || fail "$1: rank $r's parameters differ"
  done
  if ! diff <(losses "$2/metrics.jsonl" "$4") <(losses "$3/metrics.jsonl" "$4") > /dev/null; then
    fail "$1: the losses after step $4 differ"
  fi
  [[ -n $(losses "$3/metrics.jsonl" "$4") ]] || fail "$1: no step after $4"
}
resume_file() {  # resume_file DIR EARLIER
  echo "{\"attempts\": [{\"attempt\": 1, \"dir\": \"$2\"}]}" > "$1/resume.json"
}

for mode in allreduce lag local_sgd; do
  full=$work/$mode-full
  config "$full" $mode 24
  run "$full" || { fail "$mode: the uninterrupted run failed: $(tail -3 "$full/out.log")"; continue; }

  # 1. From step 10's checkpoint alone.
  only=$work/$mode-only10
  mkdir -p "$only/checkpoints"
  cp "$full"/checkpoints/step-00000010.rank-*.ckpt "$only/checkpoints/"
  resumed=$work/$mode-resumed10
  config "$resumed" $mode 24
  resume_file "$resumed" "$only"
  if run "$resumed"; then
    head -1 "$resumed/metrics.jsonl" | grep -q '"kind":"resume","step":10' ||
      fail "$mode: the first line is not a resume from step 10: $(head -1 "$resumed/metrics.jsonl")"
    same_end "$mode from step 10" "$full" "$resumed" 10
    echo "ok $mode: resumed from step 10, parameters and losses equal"
  else
    fail "$mode: the resumed run failed: $(tail -3 "$resumed/out.log")"
  fi

  # 2. Killed mid-run: both ranks SIGKILLed once a few checkpoints exist.
  killed=$work/$mode-killed
  after=$work/$mode-after-kill
  # Slow enough to kill mid-run: a sleeping straggler on rank 1 (timing only, the same arithmetic
  # as the uninterrupted run's).
  for d in "$killed" "$after"; do
    config "$d" $mode 24
    sed -i 's/"bucket_mb": 0.05}/"bucket_mb": 0.05, "straggler": {"rank": 1, "delay_ms": 60}}/' \
      "$d/config.json"
  done
  "$mpirun" --allow-run-as-root --oversubscribe --bind-to none -np 2 "$runner" \
    --config "$killed/config.json" > "$killed/out.log" 2>&1 &
  job=$!
  for _ in $(seq 1 600); do
    n=$(ls "$killed/checkpoints" 2>/dev/null | grep -c 'rank-1.ckpt$')
    ((n >= 6)) && break
    sleep 0.05
  done
  pkill -9 -f -- "--config $killed/config.json"
  wait $job 2>/dev/null
  resume_file "$after" "$killed"
  if run "$after"; then
    from=$(head -1 "$after/metrics.jsonl" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["step"])')
    ((from > 0)) || fail "$mode: after the kill it did not resume from a checkpoint"
    same_end "$mode killed" "$full" "$after" "$from"
    echo "ok $mode: killed at step >= $from, resumed from step $from, parameters and losses equal"
  else
    fail "$mode: the run after the kill failed: $(tail -3 "$after/out.log")"
  fi
done
# 3. The parameter-server modes (not reproducible run to run: asynchronous arrivals): the preempt
#    file ends the run with exit 7 after a checkpoint of every rank at the same step, and a new
#    attempt goes on from that step to the end of the budget.
for mode in async_ps backup; do
  first=$work/$mode-a1
  second=$work/$mode-a2
  for d in "$first" "$second"; do
    config "$d" $mode 40
    sed -i 's/"sync_every": 2,/"sync_every": 2, "backup_workers": 0, "straggler": {"rank": 1, "delay_ms": 30},/' "$d/config.json"
  done
  "$mpirun" --allow-run-as-root --oversubscribe --bind-to none -np 2 "$runner" \
    --config "$first/config.json" > "$first/out.log" 2>&1 &
  job=$!
  for _ in $(seq 1 600); do
    grep -q '"kind":"step","step":8,' "$first/metrics.jsonl" 2>/dev/null && break
    sleep 0.05
  done
  echo '{}' > "$first/preempt"
  wait $job
  rc=$?
  ((rc == 7)) || { fail "$mode: exit $rc after the preempt file, not 7: $(tail -3 "$first/out.log")"; continue; }
  grep -q '"kind":"end"' "$first/metrics.jsonl" && fail "$mode: a preempted run wrote an end line"
  saved=$(ls "$first/checkpoints" | sed -n 's/^step-0*\([0-9]*\)\.rank-1\.ckpt$/\1/p' | sort -n | tail -1)
  [[ -n $saved && -f $first/checkpoints/step-$(printf %08d "$saved").rank-0.ckpt ]] ||
    { fail "$mode: no checkpoint of both ranks at one step"; continue; }
  resume_file "$second" "$first"
  if run "$second"; then
    from=$(head -1 "$second/metrics.jsonl" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["step"])')
    ((from == saved)) || fail "$mode: resumed from step $from, not the preempted step $saved"
    steps=$(losses "$second/metrics.jsonl" 0 | awk '{print $1}' | tr '\n' ' ')
    [[ $steps == "$(seq -s ' ' $((saved + 1)) 40) " ]] || fail "$mode: steps after the resume are [$steps]"
    grep -q '"kind":"end","outcome":"completed"' "$second/metrics.jsonl" || fail "$mode: no completed end line"
    echo "ok $mode: preempted at step $saved (exit 7), resumed there and completed"
  else
    fail "$mode: the resumed run failed: $(tail -3 "$second/out.log")"
  fi
done
# 4. The C++ example workload's own model (res_mlp) through its own executable.
if [[ -n $example ]]; then
  full=$work/example-full only=$work/example-only10 resumed=$work/example-resumed10
  for d in "$full" "$resumed"; do
    config "$d" allreduce 24
    sed -i 's/"model": {"name": "mlp", "hidden": \[32\]}/"model": {"name": "res_mlp", "hidden": [32], "blocks": 2}/' "$d/config.json"
  done
  if RUNNER_BIN=$example run "$full"; then
    mkdir -p "$only/checkpoints"
    cp "$full"/checkpoints/step-00000010.rank-*.ckpt "$only/checkpoints/"
    resume_file "$resumed" "$only"
    if RUNNER_BIN=$example run "$resumed"; then
      same_end "example res_mlp from step 10" "$full" "$resumed" 10
      echo "ok example workload (res_mlp): resumed from step 10, parameters and losses equal"
    else
      fail "example: the resumed run failed: $(tail -3 "$resumed/out.log")"
    fi
  else
    fail "example: the uninterrupted run failed: $(tail -3 "$full/out.log")"
  fi
fi
if ((failures > 0)); then
  echo "$failures failure(s)"
  exit 1
fi
echo "all checkpoint checks passed"
