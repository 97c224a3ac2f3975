#!/usr/bin/env bash
# Stops what scripts/slurm/start.sh started in STATE_DIR: cancels the jobs, stops slurmd,
# slurmctld and munged (by their pid files only), and leaves the logs in STATE_DIR/log.
#
#   bash scripts/slurm/stop.sh /tmp/batchlab-slurm
set -uo pipefail
state=${1:?usage: stop.sh STATE_DIR}
[ -d "$state" ] || exit 0
state=$(cd "$state" && pwd)
export SLURM_CONF="$state/slurm.conf"
if [ -f "$SLURM_CONF" ]; then
  scancel --full --quiet --user="$(id -un)" 2>/dev/null || true
fi
stop_pid_file() {
  local f=$1
  [ -f "$f" ] || return 0
  local pid
  pid=$(cat "$f" 2>/dev/null)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}
stop_pid_file "$state/slurmd.pid"
stop_pid_file "$state/slurmctld.pid"
stop_pid_file "$state/munge/munged.pid"
exit 0
