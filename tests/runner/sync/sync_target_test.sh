#!/usr/bin/env bash
# Every synchronization mode trains the quickstart's MLP on real Fashion-MNIST to the
# quickstart's target (test accuracy >= 0.8 on a 2000-sample held-out subset) on 2-3 ranks (lag
# and local_sgd on gloo too; async_ps and backup need mpi's point-to-point messages):
# the runner exits 3 (target_reached) and the end line says so. One config for every mode: plain
# SGD at the quickstart's learning rate, since heavy-ball momentum with a stale gradient (lag,
# async_ps) needs a far smaller one (docs/sync.md, "Stale gradients and momentum").
# Usage: sync_target_test.sh MPIRUN RUNNER WORKDIR
set -uo pipefail
mpirun=$1 runner=$2 dir=$3
mkdir -p "$dir"
failures=0
# name | ranks | batch | comm
runs=(
  "allreduce|2|256|{\"sync\": \"allreduce\"}"
  "lag|2|256|{\"sync\": \"lag\"}"
  "local_sgd|2|256|{\"sync\": \"local_sgd\", \"sync_every\": 4}"
  "lag_gloo|2|256|{\"sync\": \"lag\", \"backend\": \"gloo\"}"
  "local_sgd_gloo|2|256|{\"sync\": \"local_sgd\", \"sync_every\": 4, \"backend\": \"gloo\"}"
  "async_ps|3|384|{\"sync\": \"async_ps\"}"
  "backup|3|384|{\"sync\": \"backup\", \"backup_workers\": 1, \"straggler\": {\"rank\": 2, \"delay_ms\": 20}}"
)
for run in "${runs[@]}"; do
  IFS='|' read -r name ranks batch comm <<< "$run"
  cfg=$dir/$name.json
  metrics=$dir/$name.jsonl
  rm -f "$metrics"
  cat > "$cfg" <<JSON
{"seed": 1, "nodes": $ranks, "batch_size": $batch, "data": {"name": "fashion-mnist"},
 "model": {"name": "mlp", "hidden": [128]},
 "optimizer": {"name": "sgd"}, "lr": {"base": 0.2, "rule": "none"},
 "budget": {"steps": 1500}, "eval": {"every_steps": 5, "subset": 2000},
 "target": {"metric": "test_accuracy", "op": ">=", "value": 0.8},
 "gns": {"every_steps": 0}, "threads": 1, "comm": $comm, "metrics_path": "$metrics"}
JSON
  "$mpirun" --allow-run-as-root --oversubscribe --bind-to none -np "$ranks" "$runner" \
    --config "$cfg" > "$dir/$name.out" 2>&1
  rc=$?
  end=$(grep '"kind":"end"' "$metrics" 2>/dev/null)
  if [[ $rc -ne 3 || $end != *'"outcome":"target_reached"'* ]]; then
    echo "FAIL $name: exit $rc (want 3), end line: ${end:-none}"
    tail -5 "$dir/$name.out"
    failures=$((failures + 1))
  else
    steps=$(sed -n 's/.*"target_step":\([0-9]*\).*/\1/p' <<< "$end")
    echo "ok   $name: target reached at step $steps on $ranks ranks"
  fi
done
exit $((failures > 0))
