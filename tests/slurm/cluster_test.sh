#!/usr/bin/env bash
# taskwire::SlurmCluster scenarios on the one-node Slurm of slurm_up.sh (ctest fixture
# "slurm"), through slurm_cluster_client:
#   cluster_test.sh STATE_DIR scale|scancel|adapt|drain CLIENT WORKER PRELOAD_LIB
#     the client program checks the scenario itself; for scale (scale-down) and drain
#     (walltime drain) this script also checks its log: workers retired and closed, none left
#     with only copies (the drain client checks that jobs replaced the retired ones)
#   cluster_test.sh STATE_DIR killed CLIENT WORKER PRELOAD_LIB
#     the client (its scheduler inside) is SIGKILLed with 2 worker jobs running and a third
#     waiting for their CPUs: the running ones end at once (their connection closes), the
#     third starts then and its worker, finding no scheduler, exits after the death timeout
#     (10 s): every job must be gone within 25 s
#   cluster_test.sh STATE_DIR jobqueue JOBQUEUE WORKER PRELOAD_LIB DAEMON_CLIENT
#     taskwire-jobqueue --jobs 2 --processes 2 --auth-token T --scheduler-file F: its
#     --print-script (without the token); a
#     SIGTERM to one job's script alone ends that job COMPLETED, exit 0, and a third job
#     replaces it; a client computes through F and shuts the cluster down, which ends
#     taskwire-jobqueue (exit 0) and every job
#   cluster_test.sh STATE_DIR nodes JOBQUEUE WORKER PRELOAD_LIB DAEMON_CLIENT
#     on the two-node Slurm of slurm_up.sh STATE_DIR PORT 2: taskwire-jobqueue --jobs 1
#     --nodes 2 --processes 2: one job on both nodes, srun starting 2 workers on each, named
#     -0 to -3; a client computes through the scheduler file and shuts the cluster down
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
  no_jobs_within 25 || fail "jobs still queued 25 s after the client died: $(squeue -h)"
  echo "every job gone $(( ($(date +%s%N) - start) / 1000000 )) ms after the client was killed"
  echo "PASSED killed"
  exit 0
fi

if [ "$mode" = nodes ]; then
  jobqueue=$client daemon_client=${6:?}
  "$jobqueue" --worker "$worker" --worker-arg=--preload "--worker-arg=$lib" \
    --worker-arg=--no-dashboard --cores 2 --processes 2 --nodes 2 --walltime 5m \
    --death-timeout 10s --listen tcp://127.0.0.1:0 --jobs 1 --scheduler-file "$dir/s.json" \
    >"$dir/jobqueue.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 600); do
    [ "$(grep -c 'joined with' "$dir/jobqueue.log")" -ge 4 ] && break; sleep 0.1
  done
  [ "$(grep -c 'joined with' "$dir/jobqueue.log")" -ge 4 ] ||
    { cat "$dir/jobqueue.log"; fail "not 4 workers after 60 s"; }
  job=$(squeue -h -o %i -n taskwire-worker)
  [ "$(wc -w <<<"$job")" -eq 1 ] || fail "not one job: $(squeue -h)"
  scontrol -o show job "$job" | grep -q 'NumNodes=2 ' || fail "the job is not on 2 nodes: $(scontrol -o show job "$job")"
  for i in 0 1 2 3; do
    grep -q "taskwire-worker-$job-$i" "$dir/jobqueue.log" ||
      { cat "$dir/jobqueue.log"; fail "no worker taskwire-worker-$job-$i"; }
  done
  timeout 60 "$daemon_client" compute "$dir/s.json" || fail "the client"
  timeout 30 tail --pid="$pid" -f /dev/null || fail "taskwire-jobqueue still running 30 s after shutdown()"
  wait "$pid" || { cat "$dir/jobqueue.log"; fail "taskwire-jobqueue exited $?"; }
  pid=""
  no_jobs_within 15 || fail "jobs still queued 15 s after taskwire-jobqueue ended: $(squeue -h)"
  echo "PASSED nodes"
  exit 0
fi

if [ "$mode" = jobqueue ]; then
  jobqueue=$client daemon_client=${6:?}
  args=(--worker "$worker" --worker-arg=--preload "--worker-arg=$lib" --worker-arg=--no-dashboard
    --cores 2 --processes 2 --walltime 5m --death-timeout 10s --listen tcp://127.0.0.1:0
    --auth-token jobqueue-test-token)
  "$jobqueue" "${args[@]}" --print-script >"$dir/script.txt" || fail "--print-script"
  grep -q -- "--connect-timeout 10s --death-timeout 10s --lifetime 240s --lifetime-stagger 15s --lifetime-grace 30s --preload $lib --no-dashboard" "$dir/script.txt" ||
    fail "--print-script: $(cat "$dir/script.txt")"
  # The token reaches the workers through the environment sbatch passes, never the script.
  grep -q jobqueue-test-token "$dir/script.txt" && fail "the job script shows the token"
  "$jobqueue" "${args[@]}" --jobs 2 --scheduler-file "$dir/s.json" >"$dir/jobqueue.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 600); do
    [ "$(grep -c 'joined with' "$dir/jobqueue.log")" -ge 4 ] && break; sleep 0.1
  done
  [ "$(grep -c 'joined with' "$dir/jobqueue.log")" -ge 4 ] || fail "not 4 workers after 60 s"
  # SIGTERM to one job's script alone (as #SBATCH --signal=B:TERM@T sends it): the script
  # passes it on to its 2 workers and ends 0 once they closed; another job replaces it.
  first=$(squeue -h -o %i -n taskwire-worker | sort -n | head -1)
  scancel --batch --signal=TERM "$first" || fail "scancel --batch --signal=TERM $first"
  s=""
  for _ in $(seq 1 300); do
    s=$(scontrol -o show job "$first") && grep -qE 'JobState=(COMPLETED|FAILED)' <<<"$s" && break
    sleep 0.1
  done
  grep -q 'JobState=COMPLETED .*ExitCode=0:0' <<<"$s" || fail "job $first after SIGTERM to its script: $s"
  # taskwire-jobqueue asks squeue every 5 s (status_interval): the replacement comes by then.
  for _ in $(seq 1 200); do [ "$(grep -c 'submitted job' "$dir/jobqueue.log")" -ge 3 ] && break; sleep 0.1; done
  TASKWIRE_AUTH_TOKEN=jobqueue-test-token timeout 60 "$daemon_client" compute "$dir/s.json" ||
    fail "the client"
  # The client's shutdown() ends the workers, their jobs and taskwire-jobqueue itself.
  timeout 30 tail --pid="$pid" -f /dev/null || fail "taskwire-jobqueue still running 30 s after shutdown()"
  wait "$pid" || { cat "$dir/jobqueue.log"; fail "taskwire-jobqueue exited $?"; }
  pid=""
  [ "$(grep -c 'submitted job' "$dir/jobqueue.log")" -eq 3 ] ||
    fail "not 3 jobs submitted (2, then 1 replacing the one ended): $(grep 'submitted job' "$dir/jobqueue.log")"
  no_jobs_within 15 || fail "jobs still queued 15 s after taskwire-jobqueue ended: $(squeue -h)"
  echo "PASSED jobqueue"
  exit 0
fi

timeout 150 "$client" "$mode" "$worker" "$lib" 2>&1 | tee "$dir/client.log"
rc=${PIPESTATUS[0]}
[ $rc -eq 0 ] || fail "the client exited $rc"
if [ "$mode" = scale ]; then
  # scale(1) retired the 3 workers going (cluster_test.sh drain checks the same for lifetimes).
  [ "$(grep -c "removing worker .*: retired" "$dir/client.log")" = 3 ] ||
    fail "scale(1) did not retire the 3 workers going"
  grep -q "held the only copy" "$dir/client.log" && fail "a worker left with only copies (recomputed)"
fi
if [ "$mode" = drain ]; then
  # The scheduler (in the client) retired workers and lost nothing: no key recomputed.
  grep -q "retiring worker .*: its --lifetime is over" "$dir/client.log" || fail "no worker retired"
  grep -q "removing worker .*: retired" "$dir/client.log" || fail "no retired worker was closed"
  grep -q "held the only copy" "$dir/client.log" && fail "a worker left with only copies (recomputed)"
  # Whether the cluster replaced a job while its workers were still retiring ("a job takes
  # its place") or once the job ended depends on whether one of its looks (every 500 ms)
  # fell inside the retirement, which here can last 60 ms: the rule itself is tested where
  # the retirement is held open (test_job_cluster: "a job whose workers retire is replaced
  # at once"); here the client checks that jobs replaced the retired ones.
fi
# The cluster's destructor scancelled its jobs: none may be left (Slurm takes a moment).
no_jobs_within 15 || fail "jobs still queued 15 s after the cluster ended: $(squeue -h)"
echo "PASSED $mode"
