#!/usr/bin/env bash
# MPI across emulated hosts (tests/hosts): one rank per host, each with its own host name and
# network namespace. hosts_mpi_test.sh MODE HOSTS_DIR MPIEXEC PROGRAM, MODE one of
#   graph  graph_program's map/reduce graphs under initialize (scheduler h1, client h2,
#          workers h3 and h4, data between the workers): every check passes, the job exits 0.
#          MPI goes by UCX's own choice of transport (shared memory between the namespaces):
#          over UCX's TCP transport MPICH 4.0.2's MPI_Finalize hangs now and then, even in a
#          plain MPI program (docs/multi-host.md), so a clean exit of every rank cannot be
#          asked of it there; bench/hosts.sh runs the graphs over TCP
#   death  launch_program kills a worker rank mid-graph (SIGKILL), with hydra's own cleanup
#          off, MPI over UCX's TCP transport on the veths: the job still ends, non-zero, a
#          rank names the dead rank and its host
# Prints FAILED on a failure (ctest's FAIL_REGULAR_EXPRESSION) and exits non-zero. Every
# launch is bounded by MPIEXEC_TIMEOUT, the script by ctest's TIMEOUT.
set -uo pipefail

mode=$1 hosts_dir=$2 mpiexec=$3 program=$4
limit=${HOSTS_MPI_TEST_SECONDS:-90}

if [ "${TASKWIRE_HOSTS_INSTANCE:-}" = "" ]; then
  exec "$hosts_dir/with-hosts" 4 -- "$0" "$@"
fi

fail() { echo "FAILED: $*"; exit 1; }

# Bytes received by the bridge from each host's veth (the root namespace's side).
veth_bytes() {
  local n=$TASKWIRE_HOSTS_INSTANCE total=0 i
  for i in 1 2 3 4; do
    total=$((total + $(cat "/sys/class/net/tw${n}h${i}b/statistics/rx_bytes")))
  done
  echo "$total"
}

# launch [MPIEXEC-FLAGS...] -- PROGRAM-ARGS...
launch() {
  local flags=()
  while [ "$1" != "--" ]; do flags+=("$1"); shift; done
  shift
  MPIEXEC_TIMEOUT=$limit "$mpiexec" "${flags[@]}" -launcher ssh \
    -launcher-exec "$hosts_dir/netns-ssh" -iface "$TASKWIRE_HOSTS_BRIDGE" \
    -hosts h1,h2,h3,h4 -n 4 "$program" "$@"
}

out=$(mktemp)
trap 'rm -f "$out"' EXIT
before=$(veth_bytes)
start=$(date +%s)
case $mode in
  graph)
    (unset UCX_TLS; launch -- initialize mpi) > "$out" 2>&1
    rc=$?
    ;;
  death)
    # UCX over TCP: without it ranks in separate network namespaces still share memory.
    UCX_TLS=tcp,self launch -disable-auto-cleanup -- kill mpi > "$out" 2>&1
    rc=$?
    ;;
  *) fail "unknown mode '$mode'" ;;
esac
took=$(($(date +%s) - start))
after=$(veth_bytes)
cat "$out"
echo "--- exit status $rc after $took s; $((after - before)) bytes over the hosts' veths"
grep -q "APPLICATION TIMED OUT" "$out" && fail "the job was still running after $limit s"

case $mode in
  graph)
    [ "$rc" -eq 0 ] || fail "the job exited $rc, not 0"
    grep -q "^FAILED" "$out" && fail "a check of the program failed"
    # Counted anywhere on a line: the ranks' stderr and stdout reach $out through separate pipes.
    [ "$(grep -o "CHECKED initialize" "$out" | wc -l)" -ge 14 ] || fail "not every check ran"
    grep -q "rank 1: done, 0 failures" "$out" || fail "the client rank did not finish"
    ;;
  death)
    [ "$rc" -ne 0 ] || fail "the job exited 0 although a rank died"
    grep -Eq "rank [23] \((worker )?on host h[34]\) died without" "$out" ||
      fail "no rank named the dead worker rank and its host"
    ;;
esac
echo "passed: $mode"
