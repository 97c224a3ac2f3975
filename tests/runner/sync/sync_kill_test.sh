#!/usr/bin/env bash
# A rank killed in any synchronization mode ends the whole mpirun job, with a non-zero exit,
# well within the communicator timeout (comm.timeout_seconds), instead of hanging the peers.
# Usage: sync_kill_test.sh MPIRUN RUNNER WORKDIR
set -uo pipefail
mpirun=$1 runner=$2 dir=$3
mkdir -p "$dir"
timeout_seconds=60
failures=0
for mode in allreduce lag local_sgd async_ps backup; do
  ranks=2
  comm="{\"sync\": \"$mode\", \"backup_workers\": 0, \"timeout_seconds\": $timeout_seconds}"
  cfg=$dir/$mode.json
  metrics=$dir/$mode.jsonl
  rm -f "$metrics"
  cat > "$cfg" <<JSON
{"seed": 1, "nodes": $ranks, "batch_size": 64, "data": {"name": "synthetic-linear"},
 "model": {"name": "logreg"}, "optimizer": {"name": "sgd"}, "lr": {"base": 0.01},
 "budget": {"steps": 100000000}, "gns": {"every_steps": 0}, "comm": $comm,
 "metrics_path": "$metrics"}
JSON
  start=$(date +%s)
  "$mpirun" --allow-run-as-root --oversubscribe --bind-to none -np $ranks "$runner" \
    --config "$cfg" > "$dir/$mode.out" 2>&1 &
  job=$!
  # Wait until training runs (step lines), then kill the rank that is not rank 0's parent's first.
  for _ in $(seq 1 300); do
    grep -q '"kind":"step"' "$metrics" 2>/dev/null && break
    sleep 0.1
  done
  victim=$(pgrep -f -- "--config $cfg" | grep -v "^$job\$" | sort -n | tail -1)
  if [[ -z $victim ]]; then
    echo "FAIL $mode: no rank process found"
    failures=$((failures + 1))
    kill "$job" 2>/dev/null
    continue
  fi
  kill -9 "$victim"
  # The job must end by itself: give it the communicator timeout plus a margin.
  waited=0
  while kill -0 "$job" 2>/dev/null && ((waited < timeout_seconds + 30)); do
    sleep 1
    waited=$((waited + 1))
  done
  if kill -0 "$job" 2>/dev/null; then
    echo "FAIL $mode: mpirun still running $waited s after rank pid $victim was killed"
    kill -9 "$job" 2>/dev/null
    pkill -9 -f -- "--config $cfg"
    failures=$((failures + 1))
    continue
  fi
  wait "$job"
  rc=$?
  if ((rc == 0)); then
    echo "FAIL $mode: mpirun exited 0 after a rank was killed"
    failures=$((failures + 1))
    continue
  fi
  echo "ok $mode: killed pid $victim, job ended with exit $rc after $(($(date +%s) - start)) s"
done
exit $((failures > 0))
