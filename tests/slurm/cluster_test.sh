#!/usr/bin/env bash
# taskwire::SlurmCluster scenarios on the one-node Slurm of slurm_up.sh (ctest fixture
# "slurm"), through slurm_cluster_client:
#   cluster_test.sh STATE_DIR scale|scancel|adapt CLIENT WORKER PRELOAD_LIB
#     the client program checks the scenario itself
#   cluster_test.sh STATE_DIR killed CLIENT WORKER PRELOAD_LIB
#     the client (its scheduler inside) is SIGKILLed with 2 worker jobs running: every job
#     must be gone within the death timeout (10 s) plus Slurm's clean-up
# Every mode then checks that no job is left in the queue. Exits 77 ("SKIPPED ...") when the
# fixture found no usable Slurm.
set -uo pipefail
state=$1 mode=$2 client=$3 worker=$4 lib=$5
[ -f "$state/env" ] && . "$state/env" && timeout 10 sinfo >/dev/null 2>&1 ||
  { echo "SKIPPED: no one-node Slurm in $state (see the test 'slurm: a one-node Slurm starts')"; exit 77; }
dir=$(mktemp -d "$state/cluster-XXXXXX")
pid=""
cleanup() {
  [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
  ids=$(squeue -h -o %i -n taskwire-worker 2>/dev/null)
  [ -n "$ids" ] && scancel $ids
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAILED $mode: $*"; exit 1; }
# The worker jobs' output goes to the submit directory: this test's own.
cd "$dir" || exit 1
no_jobs_within() {
  for _ in $(seq 1 $(($1 * 10))); do
    [ -z "$(squeue -h -o %i -n taskwire-worker)" ] && return 0
    sleep 0.1
  done
  return 1
}

if [ "$mode" = killed ]; then
  "$client" hold "$worker" "$lib" >"$dir/client.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 600); do grep -q '^JOBS' "$dir/client.log" && break; sleep 0.1; done
  grep -q '^JOBS' "$dir/client.log" || { cat "$dir/client.log"; fail "no jobs after 60 s"; }
  jobs=$(sed -n 's/^JOBS //p' "$dir/client.log")
  echo "jobs $jobs; SIGKILL to the client (pid $pid)"
  kill -9 "$pid"; wait "$pid" 2>/dev/null; pid=""
  start=$(date +%s%N)
  no_jobs_within 20 || fail "jobs still queued 20 s after the client died: $(squeue -h)"
  echo "every job gone $(( ($(date +%s%N) - start) / 1000000 )) ms after the client was killed"
  echo "PASSED killed"
  exit 0
fi

timeout 150 "$client" "$mode" "$worker" "$lib"
rc=$?
[ $rc -eq 0 ] || fail "the client exited $rc"
# The cluster's destructor scancelled its jobs: none may be left (Slurm takes a moment).
no_jobs_within 15 || fail "jobs still queued 15 s after the cluster ended: $(squeue -h)"
echo "PASSED $mode"
