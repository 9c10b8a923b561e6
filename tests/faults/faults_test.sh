#!/usr/bin/env bash
# Worker faults with the daemons as processes, each worker under its nanny (the default):
#   faults_test.sh poison|chaos SCHEDULER_EXE WORKER_EXE PRELOAD_LIB CLIENT
#   poison: 2 workers; tasks that segfault and abort must fail within 10 s naming the task
#           and the signal, the dead workers come back, and new tasks run
#   hung:   2 workers; a task that never returns is cancelled: 6 new tasks all run on the
#           other worker, and shutdown ends every process within 10 s (the hung worker
#           exits without its thread)
#   lost:   2 workers, one running a task that never returns; the scheduler is SIGKILLed:
#           every worker process ends (non-zero: the scheduler was lost) within 15 s
#   chaos:  4 workers; one worker process SIGKILLed at random every ~0.5 s while the client
#           runs 10 rounds of a 2 000-task graph: every result right
# Afterwards every daemon must have exited 0 and no process of the test may be left.
set -uo pipefail
mode=$1 scheduler=$2 worker=$3 lib=$4 client=$5
dir=$(mktemp -d /tmp/taskwire-faults-XXXXXX)
cleanup() { pkill -KILL -f "$dir" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
fail() {
  echo "FAILED $*"
  # What the test's processes were doing, and all they wrote (.out: stdout and stderr).
  local pids
  pids=$(pgrep -d, -f "$dir") && ps -o pid,stat,wchan:24,args -p "$pids"
  for f in "$dir"/*.log "$dir"/*.out; do [ -e "$f" ] && { echo "--- $f"; tail -n 60 "$f"; }; done
  exit 1
}

"$scheduler" --listen tcp://127.0.0.1:0 --scheduler-file "$dir/s.json" >"$dir/scheduler.log" 2>&1 &
daemons=($!)
for _ in $(seq 1 300); do [ -s "$dir/s.json" ] && break; sleep 0.1; done
[ -s "$dir/s.json" ] || fail "no scheduler file after 30 s"
nworkers=2
[ "$mode" = chaos ] && nworkers=4
nannies=()
for w in $(seq 1 $nworkers); do
  "$worker" --scheduler-file "$dir/s.json" --preload "$lib" --name "w$w" --restart-limit 100 \
    --log-file "$dir/worker$w.log" >"$dir/worker$w.out" 2>&1 &
  nannies+=($!)
done
daemons+=("${nannies[@]}")
for w in $(seq 1 $nworkers); do  # every worker registered
  for _ in $(seq 1 300); do grep -q "taskwire-worker" "$dir/worker$w.out" && break; sleep 0.1; done
  grep -q "taskwire-worker" "$dir/worker$w.out" || fail "worker w$w did not start"
done

if [ "$mode" = lost ]; then
  timeout 60 "$client" hang "$dir/s.json" >"$dir/client.log" 2>&1 || fail "client: $(cat "$dir/client.log")"
  kill -KILL "${daemons[0]}"
  start=$(date +%s%N)
  timeout 15 bash -c 'for p in "$@"; do tail --pid="$p" -f /dev/null; done' _ "${nannies[@]}" ||
    fail "workers still running 15 s after the scheduler was killed"
  echo "lost: every worker ended $((($(date +%s%N) - start) / 1000000)) ms after the scheduler was killed"
  for p in "${nannies[@]}"; do wait "$p"; [ $? -ne 0 ] || fail "worker $p exited 0 without its scheduler"; done
  grep -q "exiting without it" "$dir"/worker*.out || fail "the hung worker did not say why it left"
  for _ in $(seq 1 50); do pgrep -f "$dir" >/dev/null || break; sleep 0.1; done
  pgrep -af "$dir" && fail "processes left after the workers exited"
  echo "faults: lost: every worker left after the scheduler died, nothing left running"
  exit 0
fi

timeout 240 "$client" "$mode" "$dir/s.json" >"$dir/client.log" 2>&1 &
client_pid=$!
if [ "$mode" = chaos ]; then
  kills=0
  for _ in $(seq 1 400); do  # bounded: 200 s
    sleep 0.5
    kill -0 "$client_pid" 2>/dev/null || break
    child=$(pgrep -P "${nannies[RANDOM % nworkers]}" | head -n 1)
    [ -n "$child" ] && kill -KILL "$child" 2>/dev/null && kills=$((kills + 1))
  done
  echo "chaos: SIGKILLed $kills worker processes"
  [ "$kills" -ge 5 ] || fail "only $kills workers were killed: the test did not test"
fi
wait "$client_pid"
rc=$?
cat "$dir/client.log"
[ $rc -eq 0 ] || fail "client exited $rc"
[ "$mode" = hung ] || grep -q "restarting the worker" "$dir"/worker*.out || fail "no worker was restarted"
for w in $(seq 1 $nworkers); do  # every restarted worker is back (not starting while we stop)
  for _ in $(seq 1 300); do
    started=$(grep -c "nanny: started worker process" "$dir/worker$w.out")
    joined=$(grep -c "^taskwire-worker w$w at" "$dir/worker$w.out")
    [ "$started" = "$joined" ] && break
    sleep 0.1
  done
  [ "$started" = "$joined" ] || fail "worker w$w: $started processes started, $joined joined"
done
timeout 60 "$client" shutdown "$dir/s.json" || fail "shutdown"
if [ "$mode" = hung ]; then  # every daemon gone within 10 s of the shutdown, together
  timeout 10 bash -c 'for p in "$@"; do tail --pid="$p" -f /dev/null; done' _ "${daemons[@]}" ||
    fail "daemons still running 10 s after shutdown with a hung task"
  grep -q "still running 3 s after the worker closed; exiting without it" "$dir"/worker*.out ||
    fail "the hung worker did not say why it left"
fi
if [ "$mode" = poison ]; then
  grep -q "fatal signal SIGSEGV (Segmentation fault) while running task" "$dir"/worker*.out ||
    fail "no worker said which task crashed it"
fi
for p in "${daemons[@]}"; do
  timeout 15 tail --pid="$p" -f /dev/null || fail "daemon $p still running 15 s after shutdown"
  wait "$p" || fail "daemon $p exited $?"
done
for _ in $(seq 1 50); do pgrep -f "$dir" >/dev/null || break; sleep 0.1; done
pgrep -af "$dir" && fail "processes left after the daemons exited"
echo "faults: $mode: every daemon exited 0, nothing left running"
