#!/usr/bin/env bash
# Network partitions on emulated hosts (tests/hosts/with-hosts 3; root): the scheduler on h1
# (heartbeat timeout 2 s), workers w2 on h2 and w3 on h3 under their nannies, the client on h1.
#   partition_test.sh partition SCHEDULER_EXE WORKER_EXE PRELOAD_LIB CLIENT
#     h2 cut off from every host (its veth's bridge end down: packets dropped, nothing
#     refused) for PARTITION_SECONDS (5, past the heartbeat timeout): w2 is dropped, the
#     cluster serves without it; healed, w2 is back within 10 s of the heal (its nanny never
#     exited); tasks right before, during and after
#   partition_test.sh oneway SCHEDULER_EXE WORKER_EXE PRELOAD_LIB CLIENT
#     h2 cannot reach w3's listening port (a tc filter on h2's eth0 drops what h2 sends
#     there, silently; the scheduler reaches both, w3 reaches w2): tasks on w2 that need results held on w3 finish
#     right, or err naming the cause, within 60 s: never a hang
# Afterwards every daemon exits 0 after the shutdown. Prints FAILED on a failure; exits 77
# (ctest SKIP_RETURN_CODE) when it cannot make hosts (not root, no network namespaces).
# PARTITION_SECONDS=30 is the documented long run (docs/faults.md).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
hosts=$here/../hosts
if [ -z "${TASKWIRE_HOSTS_INSTANCE:-}" ]; then
  if [ "$(id -u)" -ne 0 ] || ! ip netns list >/dev/null 2>&1; then
    echo "SKIPPED: emulated hosts need root and network namespaces"
    exit 77
  fi
  exec "$hosts/with-hosts" 3 -- "$0" "$@"
fi

mode=$1 scheduler=$2 worker=$3 lib=$4 client=$5
n=$TASKWIRE_HOSTS_INSTANCE
on=$TASKWIRE_HOSTS_DIR/on-host
dir=$(mktemp -d /tmp/taskwire-partition-XXXXXX)
trap 'rm -rf "$dir"' EXIT  # with-hosts ends whatever still runs on the hosts
fail() {
  echo "FAILED $*"
  for f in "$dir"/*.log "$dir"/*.out; do [ -e "$f" ] && { echo "--- $f"; tail -n 60 "$f"; }; done
  exit 1
}
# wait_line PATTERN FILE SECONDS: a bounded wait for a line in a log.
wait_line() {
  for _ in $(seq 1 $(($3 * 10))); do grep -q -- "$1" "$2" 2>/dev/null && return 0; sleep 0.1; done
  fail "no '$1' in $(basename "$2") within $3 s"
}
ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }
joined() { grep -c "^taskwire-worker w$1 at" "$dir/worker$1.out"; }

timeout 290 "$on" h1 "$scheduler" --listen tcp://0.0.0.0:0 --interface eth0 \
  --scheduler-file "$dir/s.json" --heartbeat-timeout 2 >"$dir/scheduler.log" 2>&1 &
daemons=($!)
wait_line tcp:// "$dir/s.json" 30
for w in 2 3; do
  timeout 290 "$on" "h$w" "$worker" --scheduler-file "$dir/s.json" --preload "$lib" \
    --name "w$w" --interface eth0 --fetch-timeout-ms 3000 \
    --log-file "$dir/worker$w.log" >"$dir/worker$w.out" 2>&1 &
  daemons+=($!)
done
for w in 2 3; do wait_line "^taskwire-worker w$w at" "$dir/worker$w.out" 30; done
run_client() {  # run_client MODE [ARGS...]: the client on h1, bounded
  timeout 120 "$on" h1 "$client" "$1" "$dir/s.json" "${@:2}" >>"$dir/client.log" 2>&1 ||
    fail "client $*: $(tail -n 5 "$dir/client.log")"
}
run_client serves before

case $mode in
  partition)
    cut=$(date +%s%N)
    ip link set "tw${n}h2b" down || fail "cannot take h2's veth down"
    wait_line "closing worker" "$dir/scheduler.log" 15
    echo "partition: w2 dropped $(ms_since "$cut") ms after the cut"
    run_client serves during
    left=$((${PARTITION_SECONDS:-5} * 1000 - $(ms_since "$cut")))
    [ "$left" -le 0 ] || sleep "$((left / 1000)).$(printf '%03d' $((left % 1000)))"
    ip link set "tw${n}h2b" up || fail "cannot bring h2's veth up"
    healed=$(date +%s%N)
    for _ in $(seq 1 600); do [ "$(joined 2)" -ge 2 ] && break; sleep 0.1; done
    back=$(ms_since "$healed")
    [ "$(joined 2)" -ge 2 ] || fail "w2 did not join again within 60 s of the heal"
    echo "partition: cut $(((healed - cut) / 1000000)) ms; w2 joined again $back ms after the heal"
    [ "$back" -le 10000 ] || fail "w2 joined again $back ms after the heal (target: 10 s)"
    kill -0 "${daemons[1]}" || fail "w2's nanny exited"
    run_client serves after
    ;;
  oneway)
    port=$(grep -o "taskwire-worker w3 at tcp://[0-9.]*:[0-9]*" "$dir/worker3.out" | sed 's/.*://')
    # No tc action modules here: the filter sends those packets to a class whose queue
    # holds none (pfifo limit 0), which drops them; the rest goes through the default class.
    on_h2() { "$on" h2 "$@" 2>>"$dir/tc.log"; }
    on_h2 tc qdisc add dev eth0 root handle 1: htb default 10 r2q 1000000 &&
      on_h2 tc class add dev eth0 parent 1: classid 1:10 htb rate 10gbit &&
      on_h2 tc class add dev eth0 parent 1: classid 1:20 htb rate 8bit &&
      on_h2 tc qdisc add dev eth0 parent 1:20 handle 20: pfifo limit 0 &&
      on_h2 tc filter add dev eth0 parent 1: protocol ip prio 1 u32 \
        match ip dst "198.18.$n.3/32" match ip dport "$port" 0xffff flowid 1:20 ||
      fail "cannot drop h2's packets to w3's port $port: $(cat "$dir/tc.log")"
    start=$(date +%s%N)
    run_client oneway "w2" "w3"
    grep "^oneway: .* right" "$dir/client.log"
    echo "oneway: the client's graph ended $(ms_since "$start") ms after it started"
    ;;
  *) fail "unknown mode $mode" ;;
esac

run_client shutdown
for p in "${daemons[@]}"; do
  timeout 15 tail --pid="$p" -f /dev/null || fail "daemon $p still running 15 s after shutdown"
  wait "$p" || fail "daemon $p exited $?"
done
echo "partition_test: $mode: every daemon exited 0"
