#!/usr/bin/env bash
# One client.map over N inputs through daemons: taskwire-scheduler and 2 taskwire-worker
# processes (--preload), the client a process of its own (big_map_client), which judges the
# results and the scheduler's peak memory per task. Every daemon must exit 0 after shutdown.
#   big_map_test.sh SCHEDULER_EXE WORKER_EXE PRELOAD_LIB CLIENT N MAX_BYTES_PER_TASK
set -uo pipefail
scheduler=$1 worker=$2 lib=$3 client=$4 n=$5 max_per_task=$6
dir=$(mktemp -d /tmp/taskwire-bigmap-XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$dir"; }
trap cleanup EXIT
fail() { echo "FAILED $*"; for f in "$dir"/*.log; do echo "--- $f"; tail -n 40 "$f"; done; exit 1; }

"$scheduler" --listen tcp://127.0.0.1:0 --scheduler-file "$dir/s.json" --log-level warn \
  >"$dir/scheduler.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do [ -s "$dir/s.json" ] && break; sleep 0.1; done
[ -s "$dir/s.json" ] || fail "no scheduler file after 30 s"
for w in 1 2; do
  "$worker" --scheduler-file "$dir/s.json" --preload "$lib" --name "w$w" --log-level warn \
    >"$dir/worker$w.log" 2>&1 &
  pids+=($!)
done
"$client" "$dir/s.json" "${pids[0]}" "$n" "$max_per_task" || fail "client"
for p in "${pids[@]}"; do
  timeout 20 tail --pid="$p" -f /dev/null || fail "pid $p still running 20 s after shutdown"
  wait "$p" || fail "pid $p exited $?"
done
echo "every daemon exited 0"
