#!/usr/bin/env bash
# Brings up a one-node Slurm (munged, slurmctld, slurmd) as root, without systemd, for the
# Slurm tests: everything under STATE_DIR (config, spool, logs, pid files, munge socket), on
# private ports, so it touches no system Slurm and a second checkout can run its own.
#   slurm_up.sh STATE_DIR [CTLD_PORT] [NODES]
# CTLD_PORT (slurmd takes the next one) defaults to one in 20000-39998 derived from STATE_DIR,
# so build trees (release, asan, another checkout) running at once do not meet (with NODES
# above 1, 20000-59998 in steps of 4 and at most 3 nodes).
# NODES (default 1) above 1 emulates that many nodes on this machine: n1, n2, ..., one slurmd
# each (slurmd -N), on the ports after CTLD_PORT, each with its own spool, log and pid file,
# for jobs that span nodes.
# Exits 0 once `sinfo` shows the node idle; then STATE_DIR/env holds `export SLURM_CONF=...`.
# Exits 77 (ctest's skip) with "SKIPPED: <why>" when this machine cannot run it (no Slurm
# packages, not root); 1 when a daemon does not come up, after stopping what it started.
# slurm_down.sh STATE_DIR stops every daemon by the pid this script recorded.
set -uo pipefail
state=${1:?usage: slurm_up.sh STATE_DIR [CTLD_PORT] [NODES]}
nodes=${3:-1}
sum=$(printf %s "$(realpath -m "$state")" | cksum | cut -d' ' -f1)
[ "$nodes" -gt 1 ] && default_port=$((20000 + sum % 10000 * 4)) || default_port=$((20000 + sum % 10000 * 2))
port=${2:-$default_port}
here=$(cd "$(dirname "$0")" && pwd)

# The scenarios look for STATE_DIR/env: none unless this run brings Slurm up.
rm -f "$state/env"
skip() { echo "SKIPPED: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "the one-node Slurm needs root (slurmd runs jobs as their user)"
for exe in slurmctld slurmd munged sbatch srun scancel sinfo runuser; do
  command -v "$exe" >/dev/null || skip "$exe not found (third_party/install-deps.sh installs slurm-wlm munge)"
done
[ -r /etc/munge/munge.key ] || skip "no /etc/munge/munge.key (the munge package makes it)"

# A previous run that was killed before its clean-up: stop it first, by its recorded pids.
"$here/slurm_down.sh" "$state" >/dev/null 2>&1
mkdir -p "$state"/{spool,slurmd,log,run}
names=localhost
if [ "$nodes" -gt 1 ]; then
  names=$(seq -f 'n%g' -s ' ' 1 "$nodes")
  for n in $names; do mkdir -p "$state/slurmd-$n"; done
fi
state=$(cd "$state" && pwd)
fail() {
  echo "FAILED slurm_up: $*"
  for f in "$state"/log/*.log; do echo "--- $f"; tail -n 30 "$f"; done
  "$here/slurm_down.sh" "$state"
  exit 1
}

# munged refuses a socket directory it does not own or others may write, and runs as munge.
mdir="$state/munge"
mkdir -p "$mdir" && chown munge:munge "$mdir" && chmod 0755 "$mdir"
runuser -u munge -- munged --socket="$mdir/munge.socket" --key-file=/etc/munge/munge.key \
  --pid-file="$mdir/munged.pid" --log-file="$mdir/munged.log" --seed-file="$mdir/munged.seed" ||
  fail "munged did not start"
cp "$mdir/munged.pid" "$state/run/munged.pid"

# The node's CPU line as slurmd sees this machine, renamed `localhost` so the config does not
# depend on the host name; advertised with at least 4 CPUs (config_overrides) so the tests'
# 4-task jobs are scheduled on a 2-core runner.
cpus=$(slurmd -C | sed -n 's/.*CPUs=\([0-9]*\).*/\1/p' | head -1)
[ -n "$cpus" ] || fail "slurmd -C printed no CPUs"
[ "$cpus" -ge 4 ] || cpus=4
mem=$(slurmd -C | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' | head -1)
proctrack=proctrack/cgroup
# proctrack/cgroup needs a cgroup hierarchy slurmd can write; elsewhere linuxproc (whose
# weakness: a setsid daemon survives scancel; the tests do not start one).
[ -w /sys/fs/cgroup ] || [ -w /sys/fs/cgroup/freezer ] || proctrack=proctrack/linuxproc
# One node named localhost; or n1, n2, ... all at 127.0.0.1, each slurmd on its own port.
spool=slurmd per_node="" node_lines=""
if [ "$nodes" -gt 1 ]; then
  spool=slurmd-%n per_node=-%n i=1
  for n in $names; do
    node_lines+="NodeName=$n NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((port + i)) CPUs=$cpus RealMemory=$mem State=UNKNOWN"$'\n'
    i=$((i + 1))
  done
else
  node_lines="NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN"
fi
cat >"$state/slurm.conf" <<CONF
ClusterName=taskwire
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$mdir/munge.socket
CredType=cred/munge
StateSaveLocation=$state/spool
SlurmdSpoolDir=$state/$spool
SlurmctldPidFile=$state/run/slurmctld.pid
SlurmdPidFile=$state/run/slurmd$per_node.pid
SlurmctldLogFile=$state/log/slurmctld.log
SlurmdLogFile=$state/log/slurmd$per_node.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=$proctrack
TaskPlugin=task/none
MpiDefault=pmi2
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
KillWait=5
MinJobAge=30
InactiveLimit=0
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
$node_lines
PartitionName=debug Nodes=${names// /,} Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
cat >"$state/cgroup.conf" <<CONF
CgroupPlugin=autodetect
CgroupMountpoint=/sys/fs/cgroup
CONF
echo "export SLURM_CONF=$state/slurm.conf" >"$state/env"
export SLURM_CONF="$state/slurm.conf"

# -c: no job of an earlier run is recovered from the state directory.
slurmctld -f "$SLURM_CONF" -c || fail "slurmctld did not start"
for n in $names; do
  slurmd -f "$SLURM_CONF" -N "$n" || fail "slurmd $n did not start"
done
for _ in $(seq 1 150); do
  if [ "$(sinfo -h -N -o '%t' 2>/dev/null | grep -c '^idle')" -ge "$nodes" ]; then
    echo "slurm_up: Slurm of $nodes node(s) ($names) up in $state (port $port, $proctrack, $cpus CPUs each)"
    exit 0
  fi
  sleep 0.1
done
fail "not $nodes node(s) idle after 15 s: $(sinfo -N 2>&1)"
