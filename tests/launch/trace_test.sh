#!/usr/bin/env bash
# A traced launch (TASKWIRE_TRACE, runtime/trace.hpp) leaves each rank's timeline, and
# bench/trace_hops.py reads them: the workers ran tasks, the scheduler heard them finish.
#   trace_test.sh MPIEXEC LAUNCH_PROGRAM TRACE_HOPS
set -uo pipefail
mpiexec=$1 program=$2 hops=$3
dir=$(mktemp -d /tmp/taskwire-trace-XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAILED $*"; ls -la "$dir"; exit 1; }

TASKWIRE_TRACE=$dir MPIEXEC_TIMEOUT=60 "$mpiexec" -n 4 "$program" quick mpi > "$dir/out.log" 2>&1 ||
  { cat "$dir/out.log"; fail "the traced launch failed"; }
grep -q "rank 1: done, 0 failures" "$dir/out.log" || { cat "$dir/out.log"; fail "no result"; }
[ "$(ls "$dir"/trace-*.txt 2>/dev/null | wc -l)" -eq 4 ] || fail "not one timeline per rank"
echo "CHECKED one timeline per rank"
summary=$(python3 "$hops" "$dir") || fail "trace_hops.py could not read the timelines"
echo "$summary"
# 102 tasks in all (inc, add, and a map of 100): the two workers' task counts add up to it.
ran=$(echo "$summary" | sed -n 's/^  tasks \([0-9]*\),.*/\1/p' | awk '{s += $1} END {print s}')
[ "$ran" = 102 ] || fail "the workers' timelines hold $ran task runs, not 102"
echo "CHECKED the workers ran the 102 tasks"
echo "$summary" | grep -A3 "^rank 0:" | grep -q "task_finished 102" ||
  fail "the scheduler's timeline does not hold the 102 task_finished"
echo "CHECKED the scheduler heard 102 tasks finish"
# --gap: a worker's first wait between two tasks, with every rank's events during it.
waits=""
for rank in 2 3; do
  waits=$(python3 "$hops" "$dir" --gap "$rank" 0 --min-us 0) && break
done
echo "$waits" | grep -q "^rank [23]: a wait of" || fail "trace_hops.py --gap showed no wait between tasks"
echo "$waits" | grep -q "task_start" || fail "trace_hops.py --gap did not end at the next task start"
echo "CHECKED --gap shows a worker's wait between tasks"
