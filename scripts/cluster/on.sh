#!/usr/bin/env bash
# Runs a command on a host of the virtual cluster (scripts/cluster/start.sh): inside its network,
# UTS and mount namespaces (its address, hostname and /etc/hosts), in the current folder, with
# STATE_DIR/cluster.env (SLURM_CONF, Open MPI over the bridge) in the environment.
#
#   bash scripts/cluster/on.sh head sinfo
#   BATCHLAB_CLUSTER_STATE=/tmp/c bash scripts/cluster/on.sh 2 hostname
set -euo pipefail
host=${1:?usage: on.sh HOST(head|1..N) COMMAND [ARGS...]}
shift
prefix=${BATCHLAB_CLUSTER_PREFIX:-blc}
state=${BATCHLAB_CLUSTER_STATE:-/tmp/batchlab-cluster-$prefix}
pid_file="$state/hosts/$host.pid"
[ -f "$pid_file" ] || { echo "on.sh: host '$host' is not running in $state (scripts/cluster/start.sh)" >&2; exit 1; }
# shellcheck disable=SC1091
. "$state/cluster.env"
exec nsenter -t "$(cat "$pid_file")" -n -u -m --wd="$PWD" -- "$@"
