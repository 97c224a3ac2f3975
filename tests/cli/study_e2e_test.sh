#!/usr/bin/env bash
# A whole study through the CLI, as a user runs it: sweep run on real Fashion-MNIST (a subset) with
# 1- and 2-rank mpirun jobs -> results list -> sqlite3 on the file -> analyze -> report -> re-run
# (resume skips every finished run and adds no metric row).
# Usage: study_e2e_test.sh BATCHLAB RUNNER
set -euo pipefail
batchlab=$1
runner=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

fail() { echo "FAIL: $*" >&2; exit 1; }

cat > e2e.json <<'SPEC'
{
  "name": "e2e",
  "base": {
    "data": {"name": "fashion-mnist", "samples": 6000, "test_samples": 2000},
    "model": {"name": "mlp", "hidden": [64]},
    "optimizer": {"name": "momentum", "momentum": 0.9},
    "lr": {"base": 0.05, "base_batch_size": 64, "rule": "linear", "warmup_steps": 5},
    "budget": {"epochs": 2},
    "eval": {"every_steps": 20},
    "target": {"metric": "test_accuracy", "op": ">=", "value": 0.6},
    "threads": 1
  },
  "axes": {"batch_size": [64, 128], "nodes": [1, 2]},
  "seeds": [1]
}
SPEC

bl() { "$batchlab" --db e2e.db "$@"; }

bl sweep run e2e.json --runner "$runner" --slots 2 || fail "sweep run exited $?"

runs=$(bl results list --sweep e2e --format csv)
echo "$runs"
rows=$(echo "$runs" | tail -n +2 | grep -c . || true)
[ "$rows" -eq 4 ] || fail "expected 4 runs in results list, got $rows"
reached=$(echo "$runs" | grep -c "target_reached" || true)
[ "$reached" -ge 1 ] || fail "no run reached test_accuracy >= 0.6"
! echo "$runs" | grep -qE "failed|cancelled|pending|running" || fail "a run did not finish cleanly"

metrics_before=$(sqlite3 e2e.db "SELECT count(*) FROM run_metrics")
[ "$metrics_before" -gt 100 ] || fail "only $metrics_before metric rows in run_metrics"
two_rank=$(sqlite3 e2e.db "SELECT count(*) FROM run_summary WHERE world_size = 2 AND state = 'target_reached'")
[ "$two_rank" -ge 1 ] || fail "no 2-rank run reached the target"

bl analyze target --sweep e2e --format json > target.json || fail "analyze target exited $?"
grep -q '"batch_size"' target.json || fail "analyze target names no batch size: $(cat target.json)"

rec=$(bl analyze recommend --sweep e2e) || fail "analyze recommend exited $?"
echo "$rec" | grep -qE "^B=[0-9]+ on [0-9]+ ranks?" || fail "no measured recommendation: $rec"
echo "$rec" | grep -q "^PROJECTION (" || fail "no labelled projection: $rec"

bl report --sweep e2e --out report || fail "report exited $?"
for f in report/report.html report/report.md; do
  [ -s "$f" ] || fail "$f missing or empty"
  grep -q "e2e" "$f" || fail "$f does not name the sweep"
  grep -q "Recommendation" "$f" || fail "$f has no recommendation section"
done

bl sweep run e2e.json --runner "$runner" --slots 2 || fail "re-run exited $?"
metrics_after=$(sqlite3 e2e.db "SELECT count(*) FROM run_metrics")
[ "$metrics_after" -eq "$metrics_before" ] || fail "re-run changed metric rows: $metrics_before -> $metrics_after"
runs_after=$(sqlite3 e2e.db "SELECT count(*) FROM run_summary")
[ "$runs_after" -eq 4 ] || fail "re-run changed the number of runs to $runs_after"
echo "study_e2e: OK ($rows runs, $metrics_before metric rows)"
