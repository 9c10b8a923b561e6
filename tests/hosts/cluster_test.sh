#!/usr/bin/env bash
# Clusters across 4 emulated hosts (with-hosts), a client on h4 through the scheduler file
# running a graph whose MiB-sized data moves between the workers, then shutting it down.
#   cluster_test.sh daemons SCHEDULER_EXE WORKER_EXE PRELOAD_LIB DAEMON_CLIENT
#     TCP daemons: taskwire-scheduler on h1, taskwire-worker on h2 (bound to 0.0.0.0, its host
#     name unresolvable, advertising the address it reaches the scheduler from) and on h3
#     (--interface eth0)
#   cluster_test.sh mpi-door MPIEXEC TASKWIRE_MPI PRELOAD_LIB DAEMON_CLIENT
#     taskwire-mpi, one rank on each of h1 (scheduler, its TCP door on 0.0.0.0), h2 and h3
#     (workers, over mpi://); the client outside the job fetches results of several MiB
# Checks the advertised addresses, that worker-to-worker (daemons) and client-to-worker
# connections cross hosts, and that every process exits 0 after the shutdown.
# Prints FAILED on a failure (ctest's FAIL_REGULAR_EXPRESSION).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ -n "${TASKWIRE_HOSTS_INSTANCE:-}" ] || exec "$here/with-hosts" 4 -- "$0" "$@"

mode=$1 lib=$4 client=$5
n=$TASKWIRE_HOSTS_INSTANCE
on=$TASKWIRE_HOSTS_DIR/on-host
dir=$(mktemp -d /tmp/taskwire-hosts-cluster-XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail() {
  echo "FAILED $*"
  for f in "$dir"/*.log; do echo "--- $f"; cat "$f"; done
  exit 1  # with-hosts ends whatever still runs on the hosts
}
# wait_for PATTERN FILE: bounded (60 s) wait for a line in a log.
wait_for() {
  for _ in $(seq 600); do grep -q -- "$1" "$2" 2>/dev/null && return 0; sleep 0.1; done
  fail "no '$1' in $(basename "$2") after 60 s"
}
# Established TCP connections of host $1, as "local peer" address pairs.
connections() { "$on" "$1" ss -Htn state established | awk '{print $3, $4}'; }

start_daemons() {
  local scheduler=$2 worker=$3
  # h1's host name resolves to nothing either: without --interface the scheduler file would
  # name loopback, which no other host can reach.
  timeout 110 "$on" h1 sh -c 'hostname unresolvable-s && exec "$@"' sh \
    "$scheduler" --listen tcp://0.0.0.0:0 --interface eth0 --scheduler-file "$dir/s.json" \
    >"$dir/scheduler.log" 2>&1 &
  pids=($!)
  wait_for tcp:// "$dir/s.json"
  grep -q "tcp://198.18.$n.1:" "$dir/s.json" ||
    fail "the scheduler (--interface eth0) does not advertise h1's address: $(cat "$dir/s.json")"
  # w2's host name resolves to nothing (a node missing from DNS): a guess from it would be
  # loopback, the address that reaches the scheduler is right.
  timeout 110 "$on" h2 sh -c 'hostname unresolvable-w2 && exec "$@"' sh \
    "$worker" --scheduler-file "$dir/s.json" --preload "$lib" --name w2 \
    --listen tcp://0.0.0.0:0 >"$dir/worker2.log" 2>&1 &
  pids+=($!)
  timeout 110 "$on" h3 "$worker" --scheduler-file "$dir/s.json" --preload "$lib" --name w3 \
    --interface eth0 >"$dir/worker3.log" 2>&1 &
  pids+=($!)
  wait_for "taskwire-worker w2 at" "$dir/worker2.log"
  wait_for "taskwire-worker w3 at" "$dir/worker3.log"
  grep -q "taskwire-worker w2 at tcp://198.18.$n.2:" "$dir/worker2.log" ||
    fail "w2 (bound to 0.0.0.0) does not advertise h2's address"
  grep -q "taskwire-worker w3 at tcp://198.18.$n.3:" "$dir/worker3.log" ||
    fail "w3 (--interface eth0) does not advertise h3's address"
  echo "CHECKED the workers advertise their hosts' addresses"
}

# mpiexec inside h1 needs no -iface (README.md); ranks 0, 1, 2 on h1, h2, h3.
start_mpi_job() {
  local mpiexec=$2 taskwire_mpi=$3
  MPIEXEC_TIMEOUT=100 timeout 110 "$on" h1 "$mpiexec" -launcher ssh \
    -launcher-exec "$TASKWIRE_HOSTS_DIR/netns-ssh" -hosts h1,h2,h3 -n 3 \
    "$taskwire_mpi" --preload "$lib" --scheduler-file "$dir/s.json" \
    --listen tcp://0.0.0.0:0 --log-level info >"$dir/mpi.log" 2>&1 &
  pids=($!)
  wait_for tcp:// "$dir/s.json"
  for r in 1 2; do wait_for "rank $r: worker" "$dir/mpi.log"; done
}

case $mode in
  daemons) start_daemons "$@" ;;
  mpi-door) start_mpi_job "$@" ;;
  *) fail "unknown mode $mode" ;;
esac
grep -q "tcp://198.18.$n.1:" "$dir/s.json" || fail "the scheduler file does not name h1: $(cat "$dir/s.json")"

timeout 100 "$on" h4 "$client" spread "$dir/s.json" "$dir/go" >"$dir/client.log" 2>&1 &
client_pid=$!
wait_for "GRAPH DONE" "$dir/client.log"
w2_w3=$(connections h2 | grep -c "198.18.$n.3:")
h4_workers=$(connections h4 | grep -cE "198.18.$n.[23]:")
touch "$dir/go"
if [ "$mode" = daemons ]; then
  [ "$w2_w3" -ge 1 ] || fail "no connection between the workers on h2 and h3: $(connections h2)"
  echo "CHECKED worker-to-worker data crossed from one host to another ($w2_w3 connection(s))"
fi
[ "$h4_workers" -ge 1 ] || fail "the client on h4 fetched nothing from a worker: $(connections h4)"
echo "CHECKED the client on h4 fetched results from the workers' hosts"

wait "$client_pid" || fail "the client exited $?"
grep -q "client: done, 0 failures" "$dir/client.log" || fail "the client's checks"
for p in "${pids[@]}"; do
  timeout 20 tail --pid="$p" -f /dev/null || fail "pid $p still running 20 s after the shutdown"
  wait "$p" || fail "pid $p exited $?"
done
echo "CHECKED every process exited 0"
