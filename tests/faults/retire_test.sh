#!/usr/bin/env bash
# A worker's soft --lifetime with the daemons as processes, each worker under its nanny:
#   retire_test.sh SCHEDULER_EXE WORKER_EXE PRELOAD_LIB CLIENT
# Workers w1 (--lifetime 2s) and w2. The client runs 800 tasks of 10 ms, keeping their
# results, then a tree of adds over them; w1's lifetime ends mid-graph while it holds the only
# copies of some results. Checks: every result right; the scheduler retired w1 (its log) and
# its /metrics show every task completed exactly once (nothing recomputed), none erred, no
# key lost and one worker retired; w1's worker process and its nanny exited 0 by themselves,
# and w2 still serves. Every wait is bounded; daemons are stopped by pid.
set -uo pipefail
scheduler=$1 worker=$2 lib=$3 client=$4
dir=$(mktemp -d /tmp/taskwire-retire-XXXXXX)
daemons=()
cleanup() {
  for p in "${daemons[@]}"; do kill -KILL "$p" 2>/dev/null; done
  for p in "${daemons[@]}"; do wait "$p" 2>/dev/null; done
  rm -rf "$dir"
}
trap cleanup EXIT
fail() {
  echo "FAILED $*"
  for f in "$dir"/*.log "$dir"/*.out; do [ -e "$f" ] && { echo "--- $f"; tail -n 60 "$f"; }; done
  exit 1
}
# wait_for SECONDS COMMAND...: polls COMMAND every 0.1 s until it succeeds; false after SECONDS.
wait_for() {
  local tries=$(($1 * 10))
  shift
  for _ in $(seq 1 "$tries"); do "$@" && return 0; sleep 0.1; done
  return 1
}
# started N: worker wN printed its address; settled N PID: it did, or its nanny PID is gone.
started() { grep -q "^taskwire-worker w$1 at" "$dir/worker$1.out"; }
settled() { started "$1" || ! kill -0 "$2" 2>/dev/null; }
command -v curl >/dev/null || fail "curl is missing (third_party/install-deps.sh installs it)"
gone() { ! kill -0 "$1" 2>/dev/null || [ "$(ps -o stat= -p "$1" | cut -c1)" = Z ]; }

"$scheduler" --listen tcp://127.0.0.1:0 --scheduler-file "$dir/s.json" \
  --dashboard-address 127.0.0.1:0 >"$dir/scheduler.log" 2>&1 &
daemons+=($!)
wait_for 30 test -s "$dir/s.json" || fail "no scheduler file after 30 s"
"$worker" --scheduler-file "$dir/s.json" --preload "$lib" --name w1 --lifetime 2s \
  --lifetime-grace 60s --log-file "$dir/worker1.log" >"$dir/worker1.out" 2>&1 &
nanny1=$!
daemons+=("$nanny1")
"$worker" --scheduler-file "$dir/s.json" --preload "$lib" --name w2 \
  --log-file "$dir/worker2.log" >"$dir/worker2.out" 2>&1 &
nanny2=$!
daemons+=("$nanny2")
wait_for 30 settled 1 "$nanny1" && started 1 || fail "worker w1 did not start"
wait_for 30 settled 2 "$nanny2" && started 2 || fail "worker w2 did not start"
child1=$(pgrep -P "$nanny1" | head -n 1)
[ -n "$child1" ] || fail "no worker process under w1's nanny $nanny1"

timeout 120 "$client" retire "$dir/s.json" >"$dir/client.log" 2>&1 || fail "client: $(cat "$dir/client.log")"
grep -q "retiring worker .* (w1): its --lifetime is over" "$dir/scheduler.log" ||
  fail "the scheduler did not retire w1 while the graph ran (it ended before w1's lifetime?)"
wait_for 30 gone "$child1" || fail "w1's worker process $child1 still runs 30 s after its retirement"
wait_for 10 gone "$nanny1" || fail "w1's nanny $nanny1 still runs after its worker retired"
wait "$nanny1"
status=$?
[ "$status" -eq 0 ] || fail "w1's nanny exited $status, not 0"
grep -q "removing worker .*: retired" "$dir/scheduler.log" || fail "w1 was not removed as retired"
grep -q "held the only copy" "$dir/scheduler.log" && fail "w1 left with only copies (recomputed)"
[ "$(grep -c "nanny: started worker process" "$dir/worker1.out")" -le 1 ] ||
  fail "w1's nanny restarted its retired worker"

url=$(sed -n 's/.*"dashboard":"\([^"]*\)".*/\1/p' "$dir/s.json")
[ -n "$url" ] || fail "the scheduler file names no dashboard"
metrics=$(curl -sf --max-time 10 "$url/metrics") || fail "no /metrics at $url"
metric() { awk -v m="$1" '$1 == m { print $2 + 0 }' <<<"$metrics"; }
tasks=$(awk '/^TASKS/ { print $2 }' "$dir/client.log")
[ "$(metric taskwire_scheduler_tasks_completed_total)" = "$tasks" ] ||
  fail "$(metric taskwire_scheduler_tasks_completed_total) tasks completed for $tasks submitted: some were recomputed"
[ "$(metric taskwire_scheduler_tasks_erred_total)" = 0 ] || fail "tasks erred"
[ "$(metric taskwire_scheduler_keys_lost_total)" = 0 ] || fail "keys were lost"
[ "$(metric taskwire_scheduler_workers_retired_total)" = 1 ] || fail "not one worker retired"
timeout 60 "$client" serves "$dir/s.json" after >>"$dir/client.log" 2>&1 || fail "w2 does not serve"
echo "retire: w1 retired mid-graph, its data moved: $tasks tasks completed once each, none lost"
grep -h "retiring worker\|removing worker" "$dir/scheduler.log"
