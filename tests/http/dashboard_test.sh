#!/usr/bin/env bash
# The daemons' dashboard over real processes: a scheduler and two workers over tcp on
# 127.0.0.1 (every port free), a client process through the scheduler file.
#   dashboard_test.sh metrics|bad-requests|page|slowloris SCHEDULER WORKER PRELOAD_LIB CLIENT
#     [SLOWLORIS]
#   metrics       /health answers ok; /metrics of the scheduler and both workers pass
#                 `promtool check metrics`, before and after a graph, and its counters grew
#                 (tasks, errors, per-function durations, worker-to-worker transfers); the
#                 scheduler's task stream shows the transfers and the tasks' transfer times, and each
#                 worker's stream its own transfers on its own row
#   bad-requests  404, an oversized header (431), an oversized body (413), garbage (400), a
#                 client that never finishes its request (closed by the server), a flood of
#                 idle connections past the cap (the oldest are closed, /health answers): the
#                 scheduler still runs a graph after it
#   slowloris     200 slow clients (http_slowloris, the SLOWLORIS argument) while a graph
#                 runs: 20 probes of /health one after another are each answered
#   page          headless Chromium dumps the page's DOM twice while a graph runs: every
#                 worker is listed, and the count of completed tasks grew
#   screenshot FILE ...  as page, saving a 1280x800 screenshot to FILE (for docs/guide/running-a-cluster.md)
# Every daemon must exit 0 after the client's shutdown; nothing is left running.
set -uo pipefail
mode=$1
if [ "$mode" = screenshot ]; then shot=$2; shift; fi
scheduler=$2 worker=$3 lib=$4 client=$5 slowloris=${6:-}
dir=$(mktemp -d /tmp/taskwire-dashboard-XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$dir"; }
trap cleanup EXIT
fail() { echo "FAILED $*"; for f in "$dir"/*.log; do echo "--- $f"; tail -n 40 "$f"; done; exit 1; }
ok() { echo "CHECKED $*"; }
command -v curl >/dev/null || fail "curl is missing (third_party/install-deps.sh installs it)"

wait_for() {  # wait_for FILE REGEX: up to 30 s for a line matching REGEX in FILE
  for _ in $(seq 1 300); do grep -qE "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  fail "nothing matching '$2' in $1 after 30 s"
}
url_in() { grep -oE 'dashboard at http://[0-9.]+:[0-9]+' "$1" | head -n 1 | sed 's/dashboard at //'; }
metric() {  # metric FILE NAME{LABELS}: the sample's value (0 when absent)
  awk -v n="$2" '$1 == n { v = $2 } END { print (v == "" ? 0 : v) }' "$1"
}
scrape() {  # scrape URL OUT: /metrics, checked by promtool
  curl -sf --max-time 10 "$1/metrics" >"$2" || fail "GET $1/metrics"
  if command -v promtool >/dev/null; then
    promtool check metrics <"$2" >"$2.promtool" 2>&1 || fail "promtool: $(cat "$2.promtool")"
  else
    fail "promtool is missing (Debian's prometheus package, third_party/install-deps.sh)"
  fi
}

nthreads=2
[ "$mode" = page ] && nthreads=1
"$scheduler" --listen tcp://127.0.0.1:0 --dashboard-address 127.0.0.1:0 \
  --scheduler-file "$dir/s.json" >"$dir/scheduler.log" 2>&1 &
pids+=($!)
wait_for "$dir/scheduler.log" "dashboard at http://"
surl=$(url_in "$dir/scheduler.log")
# The scheduler file names the dashboard's URL (its port is the one it got, not the one asked).
grep -q "\"dashboard\":\"$surl\"" "$dir/s.json" || fail "the scheduler file does not name $surl: $(cat "$dir/s.json")"
for i in 1 2; do
  "$worker" --scheduler-file "$dir/s.json" --preload "$lib" --nthreads $nthreads --name "w$i" \
    --dashboard-address :0 >"$dir/worker$i.log" 2>&1 &
  pids+=($!)
done
wait_for "$dir/worker1.log" "dashboard at http://"
wait_for "$dir/worker2.log" "dashboard at http://"
wurls=("$(url_in "$dir/worker1.log")" "$(url_in "$dir/worker2.log")")
for _ in $(seq 1 300); do
  grep -q '^taskwire_scheduler_workers 2$' <<<"$(curl -sf "$surl/metrics")" && break; sleep 0.1
done

shutdown() {
  timeout 30 "$client" shutdown "$dir/s.json" || fail "shutdown"
  for p in "${pids[@]}"; do
    timeout 30 tail --pid="$p" -f /dev/null || fail "a daemon still runs 30 s after shutdown"
    wait "$p" || fail "a daemon exited $?"
  done
  pids=()
  ok "every daemon exited 0"
}

case "$mode" in
metrics)
  [ "$(curl -sf "$surl/health")" = ok ] || fail "scheduler /health"
  for u in "${wurls[@]}"; do [ "$(curl -sf "$u/health")" = ok ] || fail "worker /health at $u"; done
  ok "/health"
  scrape "$surl" "$dir/before.txt"
  [ "$(metric "$dir/before.txt" taskwire_scheduler_workers)" = 2 ] || fail "2 workers in /metrics"
  timeout 60 "$client" graph "$dir/s.json" || fail "graph"
  scrape "$surl" "$dir/after.txt"
  ok "scheduler /metrics passes promtool"
  done_before=$(metric "$dir/before.txt" taskwire_scheduler_tasks_completed_total)
  done_after=$(metric "$dir/after.txt" taskwire_scheduler_tasks_completed_total)
  [ "$done_after" -ge $((done_before + 2060)) ] || fail "completed went $done_before -> $done_after"
  [ "$(metric "$dir/after.txt" taskwire_scheduler_tasks_erred_total)" -ge 1 ] || fail "erred_total"
  [ "$(metric "$dir/after.txt" 'taskwire_scheduler_task_duration_seconds_count{function="cluster_fns::inc"}')" -ge 2000 ] ||
    fail "the duration histogram of cluster_fns::inc: $(grep duration_seconds_count "$dir/after.txt")"
  [ "$(metric "$dir/after.txt" taskwire_scheduler_threads)" = 4 ] || fail "4 threads"
  ok "scheduler counters grew: completed $done_before -> $done_after"
  transfers=0 transfer_bytes=0 worker_done=0
  for u in "${wurls[@]}"; do
    scrape "$u" "$dir/worker.txt"
    transfers=$((transfers + $(metric "$dir/worker.txt" 'taskwire_worker_transfers_total{transport="tcp"}')))
    transfer_bytes=$((transfer_bytes + $(metric "$dir/worker.txt" 'taskwire_worker_transfer_bytes_total{transport="tcp"}')))
    worker_done=$((worker_done + $(metric "$dir/worker.txt" taskwire_worker_tasks_completed_total)))
  done
  ok "workers' /metrics pass promtool"
  [ "$worker_done" -ge 2060 ] || fail "the workers completed $worker_done tasks"
  [ "$transfers" -ge 1 ] && [ "$transfer_bytes" -ge 65536 ] ||
    fail "worker-to-worker transfers: $transfers, $transfer_bytes bytes"
  ok "workers counted $worker_done tasks, $transfers transfers of $transfer_bytes bytes"
  # A worker's own stream shows the transfers into it on its own row (its page draws rows by
  # its own address), not under the peer's address.
  drawn=0
  for i in 1 2; do
    address=$(grep -oE 'at tcp://127.0.0.1:[0-9]+' "$dir/worker$i.log" | head -n 1 | sed 's/^at //')
    curl -sf "${wurls[$((i - 1))]}/json/task-stream" >"$dir/wstream.json" || fail "worker $i task stream"
    grep -oE '\{[^{}]*"transfer":true[^{}]*\}' "$dir/wstream.json" >"$dir/wtransfers.txt" || true
    if [ -s "$dir/wtransfers.txt" ]; then
      grep -v "\"worker\":\"$address\"" "$dir/wtransfers.txt" &&
        fail "worker $i ($address) has transfers under another row"
      drawn=$((drawn + 1))
    fi
  done
  [ "$drawn" -ge 1 ] || fail "no worker's task stream has a transfer"
  ok "the workers' task streams show their transfers on their own rows"
  curl -sf "$surl/json/dashboard" >"$dir/d.json" || fail "GET /json/dashboard"
  grep -q '"function":"cluster_fns::inc"' "$dir/d.json" || fail "no inc in the task stream"
  grep -q '"message":"bad input 13"' "$dir/d.json" || fail "no error in /json/dashboard"
  ok "/json/dashboard has the task stream and the error"
  curl -sf "$surl/json/task-stream" >"$dir/stream.json" || fail "GET /json/task-stream"
  # Blobs moved between the workers: the scheduler's stream shows the transfers before the
  # tasks that needed them, and those tasks' transfer time; each task ran on a thread 0 or 1.
  grep -q '"transfer":true' "$dir/stream.json" || fail "no transfer in the scheduler's task stream"
  grep -Eq '"function":"cluster_fns::concat"[^}]*"transfer_seconds":[0-9.e-]*[1-9]' "$dir/stream.json" ||
    grep -Eq '"transfer_seconds":[0-9.e-]*[1-9][^}]*"function":"cluster_fns::concat"' "$dir/stream.json" ||
    fail "no concat task with a transfer time in the scheduler's task stream"
  grep -Eq '"thread":[2-9]' "$dir/stream.json" && fail "a task on a thread its 2-thread worker lacks"
  ok "the scheduler's task stream has transfers, transfer times and threads"
  ;;
bad-requests)
  code() { curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$@"; }
  [ "$(code "$surl/nope")" = 404 ] || fail "unknown path"
  head -c 20000 /dev/zero | tr '\0' a | sed 's/^/X-Big: /' >"$dir/header"
  [ "$(code -H @"$dir/header" "$surl/health")" = 431 ] || fail "oversized header"
  head -c 100000 /dev/zero | tr '\0' a >"$dir/body"
  [ "$(code -X GET --data-binary @"$dir/body" "$surl/health")" = 413 ] || fail "oversized body"
  [ "$(code -X POST "$surl/metrics")" = 405 ] || fail "POST"
  host=${surl#http://}
  reply=$(printf 'NONSENSE\r\n\r\n' | timeout 10 bash -c "exec 3<>/dev/tcp/${host%:*}/${host#*:}; cat >&3; cat <&3" | head -n 1)
  [[ "$reply" == *" 400 "* ]] || fail "garbage request got '$reply'"
  ok "404, 431, 413, 405, 400"
  # A client that sends half a request and waits: the server's request timeout closes it.
  exec 3<>"/dev/tcp/${host%:*}/${host#*:}"
  printf 'GET /metrics HTTP/1.1\r\n' >&3
  timeout 30 cat <&3 >/dev/null || fail "a half-sent request was not closed within 30 s"
  exec 3<&-
  ok "a slow client is disconnected"
  # Idle connections past the cap (64): each one over it closes the oldest, the scheduler runs on.
  fds=()
  for _ in $(seq 1 80); do exec {fd}<>"/dev/tcp/${host%:*}/${host#*:}" && fds+=("$fd"); done
  # Accepted after the 80 idle ones (the backlog keeps order): the newest, so it is answered.
  [ "$(code "$surl/health")" = 200 ] || fail "/health not answered past the connection cap"
  timeout 60 "$client" graph "$dir/s.json" || fail "graph while the dashboard is flooded"
  for fd in "${fds[@]}"; do exec {fd}<&-; done
  [ "$(code "$surl/health")" = 200 ] || fail "/health after the flood"
  ok "the scheduler ran a graph while its dashboard was flooded, and answers after"
  ;;
slowloris)
  # A slot held by a slow client frees only at its 10 s request timeout, so each probe's 3 s
  # ends well before any would: a probe is answered only because it closes the oldest.
  [ -x "$slowloris" ] || fail "no http_slowloris given"
  host=${surl#http://}
  timeout 60 "$client" graph "$dir/s.json" >"$dir/client.log" 2>&1 &
  graph=$!
  timeout 120 "$slowloris" "${host%:*}" "${host#*:}" 200 20 3000 >"$dir/slowloris.log" 2>&1 ||
    fail "/health under a slowloris: $(tail -n 1 "$dir/slowloris.log")"
  ok "$(tail -n 1 "$dir/slowloris.log")"
  wait "$graph" || fail "the graph under a slowloris"
  ;;
page|screenshot)
  command -v chromium >/dev/null || fail "chromium is missing (third_party/install-deps.sh)"
  work=(slow "$dir/s.json" 600)
  [ "$mode" = screenshot ] && work=(demo "$dir/s.json")
  timeout 120 "$client" "${work[@]}" >"$dir/client.log" 2>&1 &
  slow=$!
  dump() {
    timeout 60 chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
      --user-data-dir="$dir/chromium" --virtual-time-budget=3000 "$@" "$surl/" 2>>"$dir/chromium.log"
  }
  for _ in $(seq 1 100); do  # until the graph is under way
    grep -qE '^taskwire_scheduler_tasks_completed_total [1-9]' <<<"$(curl -sf "$surl/metrics")" && break
    sleep 0.1
  done
  dump --dump-dom >"$dir/dom1.html" || fail "chromium --dump-dom"
  if [ "$mode" = screenshot ]; then
    dump --screenshot="$shot" --window-size=1280,800 || fail "screenshot"
  fi
  dump --dump-dom >"$dir/dom2.html" || fail "chromium --dump-dom (2)"
  for i in 1 2; do
    address=$(grep -oE 'at tcp://127.0.0.1:[0-9]+' "$dir/worker$i.log" | head -n 1 | sed 's/^at //')
    [ -n "$address" ] || fail "no address in worker$i.log"
    grep -q "data-address=\"$address\"" "$dir/dom2.html" || fail "worker $address not in the page"
  done
  n1=$(grep -oE 'id="completed">[0-9]+' "$dir/dom1.html" | grep -oE '[0-9]+$')
  n2=$(grep -oE 'id="completed">[0-9]+' "$dir/dom2.html" | grep -oE '[0-9]+$')
  [ -n "$n1" ] && [ -n "$n2" ] && [ "$n2" -gt "$n1" ] || fail "completed tasks in the page: '$n1' then '$n2'"
  ok "the page lists both workers; completed tasks $n1 -> $n2"
  wait "$slow" || fail "the slow graph"
  ;;
*) fail "unknown mode $mode" ;;
esac
shutdown
