#!/usr/bin/env bash
# Starts a private single-node Slurm on this machine for tests: munged, slurmctld and slurmd
# (NodeName=localhost, all cores), with every file (config, key, sockets, state, logs) under
# STATE_DIR. Prints the slurm.conf path; use it with `export SLURM_CONF=STATE_DIR/slurm.conf`.
# Needs root (slurmd), and the Debian packages slurm-wlm and munge (scripts/install-deps.sh).
# No cgroups: ProctrackType=proctrack/linuxproc, TaskPlugin=task/none. Stop with stop.sh.
#
#   bash scripts/slurm/start.sh /tmp/batchlab-slurm [PORT]   # PORT: slurmctld; slurmd PORT+1
set -euo pipefail
state=${1:?usage: start.sh STATE_DIR [PORT]}
port=${2:-16817}
state=$(mkdir -p "$state" && cd "$state" && pwd)
here=$(cd "$(dirname "$0")" && pwd)

for tool in munged slurmctld slurmd sinfo scontrol; do
  command -v "$tool" >/dev/null || PATH="$PATH:/usr/sbin"
  command -v "$tool" >/dev/null || { echo "start.sh: $tool not found; install slurm-wlm munge (scripts/install-deps.sh)" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "start.sh: slurmd needs root" >&2; exit 1; }

# A previous instance in the same directory is stopped first (idempotent).
bash "$here/stop.sh" "$state" >/dev/null 2>&1 || true
mkdir -p "$state"/{munge,spool,ctld,log}
chmod 700 "$state/munge"

# munge: a fresh key and a private socket.
if [ ! -s "$state/munge/munge.key" ]; then
  dd if=/dev/urandom of="$state/munge/munge.key" bs=1024 count=1 status=none
fi
chmod 400 "$state/munge/munge.key"
munged --force --key-file="$state/munge/munge.key" --socket="$state/munge/munge.socket" \
  --pid-file="$state/munge/munged.pid" --log-file="$state/log/munged.log" \
  --seed-file="$state/munge/munged.seed"

host=$(hostname -s)
cpus=$(nproc)
cat > "$state/slurm.conf" <<CONF
# Written by scripts/slurm/start.sh: a single-node test cluster on localhost.
ClusterName=batchlab
SlurmctldHost=${host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=${port}
SlurmdPort=$((port + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=${state}/munge/munge.socket
StateSaveLocation=${state}/ctld
SlurmdSpoolDir=${state}/spool
SlurmctldPidFile=${state}/slurmctld.pid
SlurmdPidFile=${state}/slurmd.pid
SlurmctldLogFile=${state}/log/slurmctld.log
SlurmdLogFile=${state}/log/slurmd.log
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
SlurmdTimeout=30
NodeName=localhost NodeAddr=127.0.0.1 CPUs=${cpus} State=UNKNOWN
PartitionName=batchlab Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF

export SLURM_CONF="$state/slurm.conf"
slurmctld -f "$SLURM_CONF" -c -i
slurmd -f "$SLURM_CONF" -N localhost -c

# Ready when the node is idle.
for _ in $(seq 1 150); do
  st=$(sinfo -h -n localhost -o %T 2>/dev/null || true)
  if [ "$st" = idle ]; then
    echo "$SLURM_CONF"
    exit 0
  fi
  sleep 0.2
done
echo "start.sh: the node did not become idle (state: '${st:-}'); logs:" >&2
tail -n 20 "$state/log/slurmctld.log" "$state/log/slurmd.log" >&2 || true
exit 1
