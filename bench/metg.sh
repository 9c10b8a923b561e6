#!/usr/bin/env bash
# bench/metg.sh: TaskBench's METG(50%) for raw MPI and taskwire, measured in one run.
#
#   bench/metg.sh [--quick] [--type T] [--width W] [--steps S] [--radix R] [--output BYTES]
#                 [--kernel K] [--iters "I1 I2 ..."] [--cores N] [--repeats N] [--csv FILE]
#                 [--nonblock PATH] [--taskbench PATH] [--systems LIST] [--timeout S]
#
# Sweeps TaskBench's -iter (task size) from large to small, interleaving three systems at each
# size: TaskBench's own MPI implementation `taskbench-mpi-nonblock` (mpiexec.mpich -n CORES,
# the raw baseline), and `taskwire-taskbench --backend mpi` and `--backend tcp`
# (mpiexec.mpich -n CORES+2: scheduler, client and CORES single-thread workers).
# For each run: FLOP/s = Total FLOPs / Elapsed Time, and the time per task = Elapsed Time x
# CORES / Total Tasks. The peak is the best FLOP/s nonblock reaches in this run; a system's
# METG(50%) is the smallest time per task at which it still reaches 50 % of that peak,
# interpolated (log of the time per task, linear in efficiency) between its smallest passing
# sweep point and the next smaller one; the smallest passing point is printed too.
#
# Defaults: -type stencil_1d -width 2 -steps 1000 -kernel compute_bound -output 16 (TaskBench's
# minimum), -iter 4^10 down to 4^0, CORES 2 (this machine's cores, and the worker count).
# --type takes any TaskBench pattern (stencil_1d, nearest, fft, tree, all_to_all, ...);
# --radix defaults to 3 (used by nearest, spread, random_nearest). --output up to 1 MiB
# makes data move. --quick: 100 steps and -iter 4^9, 4^7, 4^5, 4^3, 4^1 (about 10 s).
# --repeats N: N launches per system and size, interleaved; each point is its best (highest
# FLOP/s) run, as this machine's speed drifts (default 1).
# --systems: a comma list of nonblock, taskwire-mpi, taskwire-tcp (default: all three; the
# peak needs nonblock). --csv FILE (default metg.csv): rows
# system,type,iter,tasks,seconds,flops,us_per_task (flops: FLOP/s). --timeout: seconds per
# run (default 60), enforced by MPIEXEC_TIMEOUT and timeout(1).
# Binaries default to build/release/bench/taskbench/ under the project root.
# Exits non-zero when a run fails (its row is left out; the sweep goes on).
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
type=stencil_1d width=2 steps=1000 radix=3 output=16 kernel=compute_bound cores=2
iters="" csv=metg.csv quick=0 repeats=1 per_run_timeout=60 systems="nonblock,taskwire-mpi,taskwire-tcp"
nonblock="$here/build/release/bench/taskbench/taskbench-mpi-nonblock"
taskbench="$here/build/release/bench/taskbench/taskwire-taskbench"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --type) type="${2-}"; shift ;;
    --width) width="${2-}"; shift ;;
    --steps) steps="${2-}"; shift ;;
    --radix) radix="${2-}"; shift ;;
    --output) output="${2-}"; shift ;;
    --kernel) kernel="${2-}"; shift ;;
    --iters) iters="${2-}"; shift ;;
    --cores) cores="${2-}"; shift ;;
    --repeats) repeats="${2-}"; shift ;;
    --csv) csv="${2-}"; shift ;;
    --nonblock) nonblock="${2-}"; shift ;;
    --taskbench) taskbench="${2-}"; shift ;;
    --systems) systems="${2-}"; shift ;;
    --timeout) per_run_timeout="${2-}"; shift ;;
    -h|--help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "metg.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  [ $# -gt 0 ] || { echo "metg.sh: an option is missing its value (see --help)" >&2; exit 2; }
  shift
done
if [ -z "$iters" ]; then
  if [ $quick = 1 ]; then iters="262144 16384 1024 64 4"; else
    iters="1048576 262144 65536 16384 4096 1024 256 64 16 4 1"; fi
fi
[ $quick = 1 ] && [ "$steps" = 1000 ] && steps=100
for n in "$width" "$steps" "$radix" "$output" "$cores" "$repeats"; do
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -gt 0 ] || { echo "metg.sh: '$n' is not a positive number" >&2; exit 2; }
done
[ "$output" -le 1048576 ] || { echo "metg.sh: --output is at most 1 MiB (1048576)" >&2; exit 2; }
IFS=, read -r -a system_list <<< "$systems"
for s in "${system_list[@]}"; do
  case "$s" in
    nonblock) [ -x "$nonblock" ] || { echo "metg.sh: $nonblock not found (--nonblock PATH)" >&2; exit 2; } ;;
    taskwire-mpi|taskwire-tcp) [ -x "$taskbench" ] || { echo "metg.sh: $taskbench not found (--taskbench PATH)" >&2; exit 2; } ;;
    *) echo "metg.sh: unknown system '$s' (nonblock, taskwire-mpi, taskwire-tcp)" >&2; exit 2 ;;
  esac
done
export MPIEXEC_TIMEOUT="$per_run_timeout"

graph=(-steps "$steps" -width "$width" -type "$type" -kernel "$kernel" -output "$output")
case "$type" in nearest|spread|random_nearest|random_spread) graph+=(-radix "$radix") ;; esac

echo "# METG(50%): -type $type -width $width -steps $steps -kernel $kernel -output $output" \
  "$( [[ " ${graph[*]} " == *" -radix "* ]] && echo "-radix $radix")"
echo "# cores = $cores (the worker count = the ranks of nonblock = this machine's cores: $(nproc));" \
  "time per task = elapsed x $cores / tasks"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -n)"
echo "system,type,iter,tasks,seconds,flops,us_per_task" > "$csv"
failed=0

# run_one SYSTEM ITER: one launch; appends its CSV row.
run_one() {
  local system="$1" iter="$2" out
  local cmd
  case "$system" in
    nonblock) cmd=(mpiexec.mpich -n "$cores" "$nonblock") ;;
    taskwire-mpi) cmd=(mpiexec.mpich -n $((cores + 2)) "$taskbench" --backend mpi) ;;
    taskwire-tcp) cmd=(mpiexec.mpich -n $((cores + 2)) "$taskbench" --backend tcp) ;;
  esac
  if ! out="$(timeout $((per_run_timeout + 10)) "${cmd[@]}" "${graph[@]}" -iter "$iter" 2>&1)"; then
    echo "metg.sh: $system -iter $iter failed: ${cmd[*]} ${graph[*]} -iter $iter" >&2
    echo "$out" | tail -5 >&2
    failed=1
    return
  fi
  awk -v sys="$system" -v type="$type" -v iter="$iter" -v cores="$cores" '
    /^Total Tasks / { tasks = $3 }
    /^Total FLOPs / { flops = $3 }
    /^Elapsed Time / { secs = $3 }
    END {
      if (tasks == "" || secs == "" || secs <= 0) exit 1
      printf "%s,%s,%s,%d,%.6e,%.6e,%.3f\n", sys, type, iter, tasks, secs, flops / secs,
             secs * cores / tasks * 1e6
    }' <<< "$out" >> "$csv" || { echo "metg.sh: $system -iter $iter: no TaskBench report" >&2; failed=1; }
}

for iter in $iters; do
  for ((rep = 0; rep < repeats; ++rep)); do
    for s in "${system_list[@]}"; do run_one "$s" "$iter"; done
  done
done

# The table, then METG(50%) per system against nonblock's peak.
awk -F, -v cores="$cores" -v repeats="$repeats" '
  NR == 1 { next }
  { k = $1 SUBSEP $3  # one point per system and size: its best run of --repeats
    if (!(k in row)) { row[k] = ++n; sys[n] = $1; iter[n] = $3; secs[n] = $5; fl[n] = $6; us[n] = $7 }
    i = row[k]
    if ($6 > fl[i]) { secs[i] = $5; fl[i] = $6; us[i] = $7 }
    if ($1 == "nonblock" && $6 > peak) peak = $6
    if (!($1 in seen)) { seen[$1] = 1; order[++ns] = $1 } }
  END {
    if (repeats > 1) printf "\neach point: the best of %d runs", repeats
    printf "\n%-13s %9s %12s %14s %12s %9s\n", "system", "iter", "seconds", "FLOP/s", "us/task", "of peak"
    for (i = 1; i <= n; i++)
      printf "%-13s %9s %12.6f %14.4e %12.3f %8s\n", sys[i], iter[i], secs[i], fl[i], us[i],
             (peak > 0 ? sprintf("%.0f%%", 100 * fl[i] / peak) : "-")
    if (peak <= 0) { print "\nno nonblock run with FLOPs: no peak, no METG"; exit }
    printf "\npeak: %.4e FLOP/s (the best nonblock run); METG(50%%) interpolated between the\n", peak
    printf "smallest passing point and the next smaller one (log time per task, linear in efficiency)\n\n"
    printf "%-13s %16s %24s\n", "system", "METG(50%) us", "smallest passing (us)"
    for (k = 1; k <= ns; k++) {
      s = order[k]; best = -1
      for (i = 1; i <= n; i++)
        if (sys[i] == s && fl[i] >= 0.5 * peak && (best < 0 || us[i] < us[best])) best = i
      if (best < 0) { printf "%-13s %16s %24s\n", s, "not reached", "-"; continue }
      # The next smaller sweep point (by time per task) of that system, below 50 %.
      fail = -1
      for (i = 1; i <= n; i++)
        if (sys[i] == s && us[i] < us[best] && (fail < 0 || us[i] > us[fail])) fail = i
      if (fail < 0 || fl[fail] >= 0.5 * peak) {
        printf "%-13s %16s %24.3f\n", s, sprintf("<= %.3f", us[best]), us[best]; continue
      }
      ep = fl[best] / peak; ef = fl[fail] / peak
      lg = log(us[fail]) + (0.5 - ef) / (ep - ef) * (log(us[best]) - log(us[fail]))
      printf "%-13s %16.3f %24.3f\n", s, exp(lg), us[best]
    }
  }' "$csv"
echo
echo "CSV: $csv"
exit $failed
