#!/usr/bin/env bash
# Stops the virtual cluster scripts/cluster/start.sh started in STATE_DIR: cancels its jobs,
# kills every process in its hosts' namespaces (slurmd, slurmctld, job steps, the anchors),
# stops its munged, deletes the namespaces (and with them the bridge and veth pairs). Keeps the logs in STATE_DIR/log. Safe to run twice or on a
# half-started cluster.
#
#   bash scripts/cluster/stop.sh [STATE_DIR]     # default /tmp/batchlab-cluster-blc
set -uo pipefail
PATH="$PATH:/usr/sbin:/sbin"
prefix=${BATCHLAB_CLUSTER_PREFIX:-blc}
state=${1:-/tmp/batchlab-cluster-$prefix}
[ -d "$state" ] || exit 0
state=$(cd "$state" && pwd)
[ -f "$state/prefix" ] && prefix=$(cat "$state/prefix")

pid_of() { local f=$1; [ -f "$f" ] && cat "$f" 2>/dev/null; }
stop_pid() {
  local pid=$1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}

head_pid=$(pid_of "$state/hosts/head.pid")
if [ -n "$head_pid" ] && [ -f "$state/slurm.conf" ] && kill -0 "$head_pid" 2>/dev/null; then
  SLURM_CONF="$state/slurm.conf" timeout 10 nsenter -t "$head_pid" -n -u -m --wd=/ -- \
    scancel --quiet --partition="$prefix" 2>/dev/null || true
fi
# Every namespace of this cluster: its processes first (daemons, job steps, anchors).
for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$prefix-(head|[0-9]+)\$"); do
  pids=$(ip netns pids "$ns" 2>/dev/null)
  for pid in $pids; do kill -TERM "$pid" 2>/dev/null; done
  for _ in $(seq 1 30); do
    [ -z "$(ip netns pids "$ns" 2>/dev/null)" ] && break
    sleep 0.1
  done
  for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
done
# Anchors recorded but no longer in a namespace (a half-started cluster).
for f in "$state"/hosts/*.pid; do [ -f "$f" ] && stop_pid "$(cat "$f")"; rm -f "$f"; done
stop_pid "$(pid_of "$state/munge/munged.pid")"
rm -f "$state/munge/munged.pid"
for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$prefix-(head|[0-9]+)\$"); do
  for _ in $(seq 1 20); do
    [ -z "$(ip netns pids "$ns" 2>/dev/null)" ] && break
    sleep 0.1
  done
  ip netns del "$ns" 2>/dev/null
done
# veth ends left in this namespace by a start that failed halfway.
for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -E "^${prefix}[hp][0-9]+\$"); do
  ip link del "$link" 2>/dev/null
done
rm -f "$state"/run/*.pid
exit 0
