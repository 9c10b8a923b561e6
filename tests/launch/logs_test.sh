#!/usr/bin/env bash
# The daemons' logs and names, judged from the outside.
#   logs_test.sh log-file SCHEDULER_EXE WORKER_EXE PRELOAD_LIB CLIENT
#     both daemons with --log-file: their startup lines reach the files while they run (the
#     files are flushed at least every second), and stay there when they are SIGKILLed
#   logs_test.sh duplicate-name SCHEDULER_EXE WORKER_EXE PRELOAD_LIB CLIENT
#     a second worker with a --name in use is refused: it exits non-zero saying the name is
#     taken and what to do, and the scheduler logs both addresses; once the first one is
#     SIGKILLed (and the scheduler has noticed), a worker with that name is taken and serves
# Every wait is a bounded poll; nothing may be left running.
set -uo pipefail
mode=$1 scheduler=$2 worker=$3 lib=$4 client=$5
dir=$(mktemp -d /tmp/taskwire-logs-XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$dir"; }
trap cleanup EXIT
fail() { echo "FAILED $*"; for f in "$dir"/*.log; do echo "--- $f"; cat "$f"; done; exit 1; }

# wait_for_line FILE TEXT [COUNT]: until FILE has COUNT (default 1) lines containing TEXT.
wait_for_line() {
  local want=${3:-1}
  for _ in $(seq 1 200); do
    [ "$(grep -cF -- "$2" "$1" 2>/dev/null)" -ge "$want" ] && return 0
    sleep 0.05
  done
  fail "no '$2' in $1 after 10 s"
}
# The contact address a worker printed on stdout ("taskwire-worker NAME at ADDR (...)").
address_in() { sed -n 's/^taskwire-worker [^ ]* at \([^ ]*\) .*/\1/p' "$1" | head -1; }

start_scheduler() {
  "$scheduler" --listen tcp://127.0.0.1:0 --scheduler-file "$dir/s.json" "$@" \
    >"$dir/scheduler.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 300); do [ -s "$dir/s.json" ] && return 0; sleep 0.1; done
  fail "no scheduler file after 30 s"
}
start_worker() {  # start_worker LOG NAME [options]; SIGKILL must hit the worker: no nanny
  local log=$1 name=$2
  shift 2
  "$worker" --scheduler-file "$dir/s.json" --preload "$lib" --name "$name" --no-nanny "$@" \
    >"$log" 2>&1 &
  pids+=($!)
}

if [ "$mode" = log-file ]; then
  start_scheduler --log-level info --log-file "$dir/scheduler-file.log"
  start_worker "$dir/worker.log" w1 --log-level info --log-file "$dir/worker-file.log"
  wait_for_line "$dir/scheduler-file.log" "scheduler: listening at tcp://"
  wait_for_line "$dir/worker-file.log" "worker w1: listening at tcp://"
  wait_for_line "$dir/scheduler-file.log" "(w1) joined"
  kill -9 "${pids[0]}" "${pids[1]}"
  wait "${pids[0]}" "${pids[1]}" 2>/dev/null
  grep -qF "scheduler: listening at tcp://" "$dir/scheduler-file.log" || fail "scheduler lines lost"
  grep -qF "worker w1: listening at tcp://" "$dir/worker-file.log" || fail "worker lines lost"
  echo "both log files kept their startup lines through SIGKILL"
  exit 0
fi

[ "$mode" = duplicate-name ] || fail "unknown mode $mode"
start_scheduler --log-level info
start_worker "$dir/first.log" w1 --log-level info
first=${pids[1]}
wait_for_line "$dir/scheduler.log" "(w1) joined"
wait_for_line "$dir/first.log" "taskwire-worker w1 at"
first_address=$(address_in "$dir/first.log")

timeout 30 "$worker" --scheduler-file "$dir/s.json" --preload "$lib" --name w1 --no-nanny \
  >"$dir/second.log" 2>&1
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "the second w1 exited $rc (0: accepted, 124: hung)"
grep -qF "name 'w1' is already taken by the worker at $first_address" "$dir/second.log" ||
  fail "the second w1 does not say the name is taken"
grep -qF -- "--name" "$dir/second.log" || fail "the second w1 does not say what to do"
second_address=$(address_in "$dir/second.log")
[ -n "$second_address" ] || fail "the second w1 printed no address"
grep -F "refusing worker $second_address" "$dir/scheduler.log" | grep -qF "$first_address" ||
  fail "the scheduler's log does not name both workers"
echo "the second w1 was refused (exit $rc) and the scheduler logged both addresses"

kill -9 "$first"
wait_for_line "$dir/scheduler.log" "lost worker $first_address"
start_worker "$dir/restarted.log" w1 --log-level info
restarted=${pids[2]}
wait_for_line "$dir/scheduler.log" "(w1) joined" 2
timeout 60 "$client" compute "$dir/s.json" || fail "client"
for p in "$restarted" "${pids[0]}"; do
  timeout 20 tail --pid="$p" -f /dev/null || fail "pid $p still running 20 s after shutdown"
  wait "$p" || fail "pid $p exited $?"
done
echo "after the first w1 died, a new w1 joined and served; every daemon exited 0"
