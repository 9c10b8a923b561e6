#!/usr/bin/env bash
# Stops the one-node Slurm slurm_up.sh started in STATE_DIR: cancels its jobs, then TERMs
# each daemon by its recorded pid (KILL after 5 s), and checks none is left.
#   slurm_down.sh STATE_DIR
# Exits 1 ("FAILED ...") if a daemon it started is still alive at the end.
set -uo pipefail
state=${1:?usage: slurm_down.sh STATE_DIR}
[ -d "$state/run" ] || exit 0
# Jobs first, while slurmctld and slurmd can still end them: a step whose slurmd is gone
# keeps its slurmstepd (and the job's processes) alive.
if [ -f "$state/slurm.conf" ] && [ -f "$state/run/slurmctld.pid" ]; then
  export SLURM_CONF="$state/slurm.conf"
  timeout 10 scancel --full --quiet --user=root 2>/dev/null
  for _ in $(seq 1 100); do
    [ -z "$(timeout 5 squeue -h -o %i 2>/dev/null)" ] && break
    sleep 0.1
  done
fi
# A zombie is gone for this purpose: it holds no port and runs nothing (reaped ~2 s later).
alive() { local s; s=$(ps -o stat= -p "$1" 2>/dev/null) && [ -n "$s" ] && [ "${s:0:1}" != Z ]; }
pids=()
for f in "$state"/run/slurmd*.pid "$state/run/slurmctld.pid" "$state/run/munged.pid"; do
  [ -f "$f" ] || continue
  p=$(cat "$f")
  [ -n "$p" ] && alive "$p" && { kill -TERM "$p"; pids+=("$p"); }
done
for _ in $(seq 1 50); do
  left=(); for p in "${pids[@]}"; do alive "$p" && left+=("$p"); done
  [ ${#left[@]} -eq 0 ] && break
  sleep 0.1
done
for p in "${left[@]}"; do kill -KILL "$p" 2>/dev/null; done
sleep 0.2
for p in "${pids[@]}"; do
  alive "$p" && { echo "FAILED slurm_down: pid $p still alive"; exit 1; }
done
# A slurmstepd of this instance that outlived its job (its environment names this config):
# by pid, and said.
for p in $(pgrep -x slurmstepd); do
  tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "SLURM_CONF=$state/slurm.conf" || continue
  echo "slurm_down: killing slurmstepd $p left by a job: $(ps -o args= -p "$p")"
  kill -KILL "$p"
done
rm -f "$state"/run/*.pid "$state/env"
echo "slurm_down: stopped ${#pids[@]} daemons"
