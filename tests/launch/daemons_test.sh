#!/usr/bin/env bash
# Daemons as separate processes, driven by a client process through a scheduler file.
#   daemons_test.sh daemons|early|sigkill|sigstop SCHEDULER_EXE WORKER_EXE PRELOAD_LIB CLIENT
#     taskwire-scheduler + taskwire-worker processes (--preload); `early`: the workers start
#     before the scheduler (its file does not exist yet) and must join it; `sigkill`: the client
#     SIGKILLs one worker mid-graph and must still get correct results; `sigstop`: one
#     worker, stopped while it holds a result: the client's get() must fail, not hang
#     `tls`: as `daemons` over tls:// with mutual TLS, the certificates of CERT_DIR (6th
#     argument, make_test_certs.sh's) given to the daemons as flags, to the client by the
#     environment
#   daemons_test.sh door MPIEXEC TASKWIRE_MPI PRELOAD_LIB CLIENT [CERT_DIR]
#     mpiexec.mpich -n 3 taskwire-mpi: the client comes in through its TCP door and fetches
#     results of MiB (spread) as well as small ones; each worker rank serves /metrics; with
#     CERT_DIR the ranks talk over --transport tls (mutual TLS, make_test_certs.sh's files)
# Every daemon left must exit 0 after the client's shutdown; nothing may be left running.
set -uo pipefail
mode=$1
dir=$(mktemp -d /tmp/taskwire-daemons-XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$dir"; }
trap cleanup EXIT
fail() { echo "FAILED $*"; for f in "$dir"/*.log; do echo "--- $f"; cat "$f"; done; exit 1; }

wait_for_file() {
  for _ in $(seq 1 300); do [ -s "$1" ] && return 0; sleep 0.1; done
  fail "no scheduler file after 30 s"
}

if [ "$mode" = door ]; then
  mpiexec=$2 exe=$3 lib=$4 client=$5 certs=${6:-} transport=()
  [ -n "$certs" ] && transport=(--transport tls --tls-ca-file "$certs/ca.pem"
    --tls-cert "$certs/node.pem" --tls-key "$certs/node.key")
  # Over tls, the workers serve results on tls:// only: the client needs the certificates.
  [ -n "$certs" ] && export TASKWIRE_TLS_CA_FILE="$certs/ca.pem" \
    TASKWIRE_TLS_CERT="$certs/node.pem" TASKWIRE_TLS_KEY="$certs/node.key"
  MPIEXEC_TIMEOUT=90 "$mpiexec" -n 3 "$exe" --preload "$lib" --scheduler-file "$dir/s.json" \
    "${transport[@]}" --log-level info >"$dir/mpi.log" 2>&1 &
  pids+=($!)
  wait_for_file "$dir/s.json"
  grep -q tcp:// "$dir/s.json" || fail "the scheduler file has no tcp:// door: $(cat "$dir/s.json")"
  # Both worker ranks serve a dashboard of their own beside the scheduler rank's.
  for _ in $(seq 1 300); do
    [ "$(grep -c 'worker dashboard at http://' "$dir/mpi.log")" -ge 2 ] && break; sleep 0.1
  done
  wurls=$(grep -oE 'worker dashboard at http://[0-9.]+:[0-9]+' "$dir/mpi.log" | sed 's/.* at //')
  [ "$(echo "$wurls" | grep -c http)" -eq 2 ] || fail "not two worker dashboards: $wurls"
  for u in $wurls; do
    # Not `curl | grep -q`: grep stops reading at the first match, curl then fails to write
    # the rest, and pipefail reports that as a failure.
    metrics=$(curl -sSf --max-time 10 "$u/metrics") || fail "GET $u/metrics"
    grep -q '^taskwire_worker_tasks_completed_total' <<<"$metrics" ||
      fail "no worker metrics at $u/metrics"
  done
  # spread: results of MiB, which the client outside the job fetches from the workers.
  touch "$dir/go"
  timeout 60 "$client" spread "$dir/s.json" "$dir/go" || fail "client"
  timeout 30 tail --pid="${pids[0]}" -f /dev/null || fail "taskwire-mpi still running 30 s after shutdown"
  wait "${pids[0]}" || fail "taskwire-mpi exited $?"
  [ -z "$certs" ] || grep -q "tls://" "$dir/mpi.log" || fail "the ranks did not talk over tls://"
  echo "taskwire-mpi: every rank exited 0"
  exit 0
fi

scheduler=$2 worker=$3 lib=$4 client=$5
workers=(1 2 3) heartbeat=5 nanny= scheme=tcp tls=()
if [ "$mode" = tls ]; then
  certs=$6 scheme=tls
  tls=(--tls-ca-file "$certs/ca.pem" --tls-cert "$certs/node.pem" --tls-key "$certs/node.key")
  export TASKWIRE_TLS_CA_FILE="$certs/ca.pem" TASKWIRE_TLS_CERT="$certs/node.pem" \
    TASKWIRE_TLS_KEY="$certs/node.key"
fi
# sigkill and sigstop signal the worker process itself, so no nanny in between
[ "$mode" = sigkill ] || [ "$mode" = sigstop ] && nanny=--no-nanny
# sigstop: the stopped worker must not be removed for missing heartbeats meanwhile
[ "$mode" = sigstop ] && workers=(1) heartbeat=120
start_scheduler() {
  "$scheduler" --listen $scheme://127.0.0.1:0 --scheduler-file "$dir/s.json" "${tls[@]}" \
    --heartbeat-timeout $heartbeat >"$dir/scheduler.log" 2>&1 &
  pids+=($!)
  wait_for_file "$dir/s.json"
}
start_workers() {
  for w in "${workers[@]}"; do
    "$worker" --scheduler-file "$dir/s.json" --preload "$lib" --name "w$w" $nanny "${tls[@]}" \
      --log-level info >"$dir/worker$w.log" 2>&1 &
    pids+=($!)
  done
}
if [ "$mode" = early ]; then
  start_workers  # pids[0..2]
  for w in "${workers[@]}"; do  # each is waiting for the file (logged every 5 s)
    for _ in $(seq 1 200); do grep -q "waiting for the scheduler file" "$dir/worker$w.log" && break; sleep 0.1; done
    grep -q "waiting for the scheduler file" "$dir/worker$w.log" || fail "worker $w does not say it waits"
  done
  start_scheduler
else
  start_scheduler  # pids[0]
  start_workers
fi
for w in "${workers[@]}"; do  # every worker registered
  for _ in $(seq 1 100); do grep -q "taskwire-worker" "$dir/worker$w.log" && break; sleep 0.1; done
done
if [ "$mode" = sigkill ]; then
  timeout 90 "$client" sigkill "$dir/s.json" "${pids[2]}" || fail "client"
  survivors=("${pids[0]}" "${pids[1]}" "${pids[3]}")
elif [ "$mode" = sigstop ]; then
  timeout 90 "$client" sigstop "$dir/s.json" "${pids[1]}" || { kill -CONT "${pids[1]}"; fail "client"; }
  survivors=("${pids[@]}")
else
  timeout 60 "$client" compute "$dir/s.json" || fail "client"
  survivors=("${pids[@]}")
fi
if [ "$mode" = tls ]; then
  grep -q 'tls://' "$dir/s.json" || fail "the scheduler file has no tls:// address: $(cat "$dir/s.json")"
  grep -q 'tls://' "$dir/worker1.log" || fail "worker 1 does not say tls://"
fi
for p in "${survivors[@]}"; do
  timeout 20 tail --pid="$p" -f /dev/null || fail "pid $p still running 20 s after shutdown"
  wait "$p" || fail "pid $p exited $?"
done
echo "every daemon exited 0"
