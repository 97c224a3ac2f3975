#!/usr/bin/env bash
# Starts a virtual Slurm cluster of N hosts on this machine (default 3), for the `cluster` tests
# and docs/cluster.md. Every host is a network namespace with its own UTS namespace (hostname),
# an address on a private bridge and its own slurmd (spool, pid and log files); a head host runs
# slurmctld and is where sbatch, scontrol and `batchlab sweep run` are started (a login node).
# One munged (a filesystem socket, so every namespace reaches it) is shared. The bridge and
# every address live only inside the namespaces created here; the filesystem is shared, as a
# cluster's shared filesystem would be.
#
#   bash scripts/cluster/start.sh [N] [STATE_DIR]   # prints STATE_DIR/cluster.env
#   source STATE_DIR/cluster.env                    # SLURM_CONF, the Open MPI settings
#   bash scripts/cluster/on.sh head sinfo           # a command on a host (head, 1 .. N)
#   bash scripts/cluster/stop.sh [STATE_DIR]
#
# Names: BATCHLAB_CLUSTER_PREFIX (default blc: namespaces blc-head, blc-1 ..; hosts blc-head,
# blc1 ..), BATCHLAB_CLUSTER_SUBNET (default 10.213.7: head .1, host i .(10+i)),
# BATCHLAB_CLUSTER_CPUS (CPUs per host, default this machine's). A cluster of the same prefix is
# stopped first (idempotent); a failed start stops what it started. Needs root, iproute2,
# util-linux (nsenter, unshare), slurm-wlm and munge (scripts/install-deps.sh).
set -euo pipefail
n=${1:-3}
here=$(cd "$(dirname "$0")" && pwd)
prefix=${BATCHLAB_CLUSTER_PREFIX:-blc}
state=${2:-/tmp/batchlab-cluster-$prefix}
subnet=${BATCHLAB_CLUSTER_SUBNET:-10.213.7}
cpus=${BATCHLAB_CLUSTER_CPUS:-$(nproc)}
port=${BATCHLAB_CLUSTER_PORT:-16917}   # slurmctld; slurmd port+1 (inside the namespaces only)

case $n in '' | *[!0-9]*) echo "start.sh: N: a number of hosts, 1 to 200 (got '$n')" >&2; exit 2 ;; esac
if [ "$n" -lt 1 ] || [ "$n" -gt 200 ]; then
  echo "start.sh: N: a number of hosts, 1 to 200 (got $n)" >&2; exit 2
fi
[ "$(id -u)" = 0 ] || { echo "start.sh: needs root (network namespaces, slurmd)" >&2; exit 1; }
PATH="$PATH:/usr/sbin:/sbin"
for tool in ip nsenter unshare munged slurmctld slurmd sinfo scontrol; do
  command -v "$tool" >/dev/null ||
    { echo "start.sh: $tool not found; install iproute2, util-linux, slurm-wlm, munge (scripts/install-deps.sh)" >&2; exit 1; }
done

bash "$here/stop.sh" "$state" >/dev/null 2>&1 || true
mkdir -p "$state"
state=$(cd "$state" && pwd)
# A failed start leaves nothing running and no namespace behind.
trap 'rc=$?; if [ $rc -ne 0 ]; then echo "start.sh: failed; stopping what was started" >&2; tail -n 15 "$state"/log/*.log >&2 2>/dev/null; bash "$here/stop.sh" "$state" >/dev/null 2>&1; fi' EXIT
mkdir -p "$state"/{munge,spool,ctld,log,run,hosts}
chmod 700 "$state/munge"
echo "$prefix" > "$state/prefix"
echo "$n" > "$state/size"

hosts=(head $(seq 1 "$n"))
host_name() { if [ "$1" = head ]; then echo "$prefix-head"; else echo "$prefix$1"; fi; }
host_addr() { if [ "$1" = head ]; then echo "$subnet.1"; else echo "$subnet.$((10 + $1))"; fi; }
ns_of() { echo "$prefix-$1"; }

# /etc/hosts of every host (bind-mounted over /etc/hosts inside its mount namespace).
hosts_file="$state/hosts.txt"
{
  echo "127.0.0.1 localhost"
  for h in "${hosts[@]}"; do echo "$(host_addr "$h") $(host_name "$h")"; done
} > "$hosts_file"

# The network: a bridge in the head's namespace, a veth pair per host (eth0 inside it).
for h in "${hosts[@]}"; do
  ns=$(ns_of "$h")
  ip netns add "$ns"
  ip -n "$ns" link set lo up
done
head_ns=$(ns_of head)
ip -n "$head_ns" link add br0 type bridge
ip -n "$head_ns" link set br0 up
ip -n "$head_ns" addr add "$(host_addr head)/24" dev br0
for h in "${hosts[@]:1}"; do
  ns=$(ns_of "$h")
  ip link add "${prefix}h$h" type veth peer name "${prefix}p$h"
  ip link set "${prefix}h$h" netns "$ns"
  ip -n "$ns" link set "${prefix}h$h" name eth0
  ip -n "$ns" addr add "$(host_addr "$h")/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip link set "${prefix}p$h" netns "$head_ns"
  ip -n "$head_ns" link set "${prefix}p$h" master br0
  ip -n "$head_ns" link set "${prefix}p$h" up
done

# An anchor per host: a process holding its network namespace, its UTS namespace (hostname)
# and a private mount namespace with its /etc/hosts bind-mounted; on.sh and the daemons enter
# these with nsenter. (Not `ip netns exec`: it remounts /sys without /sys/fs/cgroup, which
# slurmd needs.)
for h in "${hosts[@]}"; do
  name=$(host_name "$h")
  setsid nsenter --net="/var/run/netns/$(ns_of "$h")" unshare --uts --mount --propagation private \
    sh -c "mount --bind '$hosts_file' /etc/hosts && hostname $name && exec sleep infinity" \
    </dev/null >/dev/null 2>&1 &
  echo $! > "$state/hosts/$h.pid"
done
for h in "${hosts[@]}"; do
  pid=$(cat "$state/hosts/$h.pid")
  for _ in $(seq 1 50); do
    [ "$(nsenter -t "$pid" -u hostname 2>/dev/null)" = "$(host_name "$h")" ] && break
    sleep 0.1
  done
  [ "$(nsenter -t "$pid" -u hostname)" = "$(host_name "$h")" ] ||
    { echo "start.sh: host $h did not come up" >&2; exit 1; }
done

# munge: a fresh key and a private socket, shared by every host.
dd if=/dev/urandom of="$state/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$state/munge/munge.key"
munged --force --key-file="$state/munge/munge.key" --socket="$state/munge/munge.socket" \
  --pid-file="$state/munge/munged.pid" --log-file="$state/log/munged.log" \
  --seed-file="$state/munge/munged.seed"

nodes="$prefix[1-$n]"
[ "$n" = 1 ] && nodes="${prefix}1"
cat > "$state/slurm.conf" <<CONF
# Written by scripts/cluster/start.sh: a virtual cluster of $n hosts in network namespaces.
ClusterName=$prefix
SlurmctldHost=$(host_name head)($(host_addr head))
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$state/munge/munge.socket
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/spool/%n
SlurmctldPidFile=$state/run/slurmctld.pid
SlurmdPidFile=$state/run/slurmd-%n.pid
SlurmctldLogFile=$state/log/slurmctld.log
SlurmdLogFile=$state/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MinJobAge=3600
KillWait=5
InactiveLimit=0
SlurmctldTimeout=30
# A host that stops answering is DOWN after 10 s (the fault tests kill hosts).
SlurmdTimeout=10
MessageTimeout=5
SlurmdParameters=config_overrides
CONF
# One line per host: its name (the hostname inside its namespace) and its address.
for h in "${hosts[@]:1}"; do
  echo "NodeName=$(host_name "$h") NodeAddr=$(host_addr "$h") CPUs=$cpus State=UNKNOWN"
done >> "$state/slurm.conf"
echo "PartitionName=$prefix Nodes=$nodes Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO" \
  >> "$state/slurm.conf"

# What a command on a host needs: the cluster's config and Open MPI over TCP on the bridge.
cat > "$state/cluster.env" <<ENV
export SLURM_CONF=$state/slurm.conf
export BATCHLAB_CLUSTER_STATE=$state
export OMPI_MCA_btl_tcp_if_include=$subnet.0/24
export OMPI_MCA_oob_tcp_if_include=$subnet.0/24
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ENV
export SLURM_CONF="$state/slurm.conf"

on() { local h=$1; shift; nsenter -t "$(cat "$state/hosts/$h.pid")" -n -u -m --wd="$state" -- "$@"; }
on head slurmctld -f "$SLURM_CONF" -c -i
for h in "${hosts[@]:1}"; do
  mkdir -p "$state/spool/$(host_name "$h")"
  # BATCHLAB_CLUSTER_NEVER_UP=i (tests): host i's slurmd is never started.
  [ "$h" = "${BATCHLAB_CLUSTER_NEVER_UP:-}" ] && continue
  on "$h" slurmd -f "$SLURM_CONF" -N "$(host_name "$h")" -c
done

# Ready when every node is idle.
wait_s=${BATCHLAB_CLUSTER_WAIT_SECONDS:-60}
deadline=$((SECONDS + wait_s))
st=
while [ "$SECONDS" -lt "$deadline" ]; do
  st=$(on head sinfo -h -p "$prefix" -o '%T %D' 2>/dev/null | tr '\n' ' ' || true)
  if [ "$st" = "idle $n " ]; then
    trap - EXIT
    echo "$state/cluster.env"
    exit 0
  fi
  sleep 0.2
done
down=$(on head sinfo -h -N -p "$prefix" -o '%N %T' 2>/dev/null | awk '$2 != "idle" {print $1 " (" $2 ")"}' | tr '\n' ' ')
echo "start.sh: host(s) never came up within ${wait_s} s: ${down:-unknown} (sinfo: '${st:-}'); see $state/log" >&2
exit 1
