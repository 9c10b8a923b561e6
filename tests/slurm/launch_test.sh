#!/usr/bin/env bash
# taskwire launched under the one-node Slurm of slurm_up.sh (ctest fixture "slurm"):
#   launch_test.sh STATE_DIR mpi-sbatch|mpi-srun MPIEXEC TASKWIRE_MPI PRELOAD_LIB CLIENT
#     taskwire-mpi, 4 ranks, as `sbatch --wrap 'mpiexec.mpich -n 4 ...'` (hydra inside the
#     allocation, which starts its ranks through srun) or as `srun --mpi=pmi2 -n 4 -O ...`;
#     a client outside the job computes through its scheduler file and shuts it down; the
#     job must end COMPLETED with exit code 0, and its log must name ranks 0-3 (not rank 0
#     four times, as SLURM_PROCID would under hydra)
#   launch_test.sh STATE_DIR mpi-sbatch-term MPIEXEC TASKWIRE_MPI PRELOAD_LIB CLIENT
#     as mpi-sbatch (mpiexec exec'ed by the batch shell), ended by SIGTERM to the batch shell
#     alone (`scancel -b --signal=TERM`, what `#SBATCH --signal=B:TERM@T` sends T s before
#     the time limit): every rank must shut down cleanly and the job end COMPLETED, exit
#     code 0. (The time limit's own SIGTERM goes to every process, hydra's proxies under
#     srun too; those die, and the job ends FAILED: hence --signal=B:TERM in docs/guide/slurm.md.)
#   launch_test.sh STATE_DIR program-sbatch|program-srun MPIEXEC PROGRAM
#     a user program with taskwire::mpi::initialize (tests/launch/launch_program.cpp) the same
#     two ways; it checks its own results ("rank 1: done, 0 failures")
#   launch_test.sh STATE_DIR docs DOCS_SLURM_DIR BIN_DIR... -- PRELOAD_LIB CLIENT PROGRAM
#     the Slurm guide's job scripts (docs/slurm/*.sbatch, shown in docs/guide/slurm.md), as they are, with the build's programs
#     first on PATH (BIN_DIRs), PRELOAD_LIB as ./libmytasks.so and PROGRAM as ./my_program:
#     taskwire-mpi.sbatch and scheduler.sbatch + workers.sbatch each serve a client that
#     computes and shuts the cluster down; program.sbatch runs the program; every job must
#     end COMPLETED with exit code 0
# Exits 77 ("SKIPPED ...") when the fixture found no usable Slurm; prints "FAILED ..." and
# exits 1 on a failure, after cancelling its job. Leaves no job and no process behind.
set -uo pipefail
state=$1 mode=$2
[ -f "$state/env" ] && . "$state/env" && timeout 10 sinfo >/dev/null 2>&1 ||
  { echo "SKIPPED: no one-node Slurm in $state (see the test 'slurm: a one-node Slurm starts')"; exit 77; }
dir=$(mktemp -d "$state/launch-XXXXXX")
job="" pid="" started=()
cleanup() {
  [ ${#started[@]} -gt 0 ] && scancel "${started[@]}" 2>/dev/null
  [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
fail() {
  echo "FAILED $mode: $*"
  for f in "$dir"/*.out "$dir"/*.log; do [ -f "$f" ] && { echo "--- $f"; tail -n 40 "$f"; }; done
  exit 1
}
# The state the job ended in, as slurmctld keeps it (MinJobAge) after the job is gone.
job_end() {
  for _ in $(seq 1 300); do
    s=$(scontrol -o show job "$job" 2>/dev/null) || break
    grep -qE 'JobState=(COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY)' <<<"$s" &&
      { grep -oE 'JobState=[A-Z_]+|ExitCode=[0-9:]+' <<<"$s" | tr '\n' ' '; return; }
    sleep 0.1
  done
  echo "still running after 30 s"
}
wait_for_file() {
  for _ in $(seq 1 300); do [ -s "$1" ] && return 0; sleep 0.1; done
  fail "no $1 after 30 s"
}
# Every rank logs "[rank N]" at info; under hydra in sbatch each must be its own.
check_ranks() {
  for r in 0 1 2 3; do grep -q "\[rank $r\]" "$1" || fail "no log line of rank $r in $1"; done
}

case $mode in
mpi-sbatch|mpi-srun|mpi-sbatch-term)
  mpiexec=$3 exe=$4 lib=$5 client=$6
  args=(--preload "$lib" --scheduler-file "$dir/s.json" --no-dashboard --log-level info)
  if [ "$mode" != mpi-srun ]; then
    job=$(sbatch --parsable -n 4 -t 2 -o "$dir/job.out" \
      --wrap "MPIEXEC_TIMEOUT=90 exec $mpiexec -n 4 $exe ${args[*]}") || fail "sbatch"
    started+=("$job")
  else
    timeout 90 srun --mpi=pmi2 -n 4 -O -t 2 "$exe" "${args[@]}" >"$dir/job.out" 2>&1 &
    pid=$!
  fi
  wait_for_file "$dir/s.json"
  if [ "$mode" = mpi-sbatch-term ]; then
    for _ in $(seq 1 300); do [ "$(grep -c 'joined with' "$dir/job.out")" -ge 3 ] && break; sleep 0.1; done
    scancel --batch --signal=TERM "$job" || fail "scancel --batch --signal=TERM"
  else
    timeout 60 "$client" compute "$dir/s.json" >"$dir/client.log" 2>&1 || fail "the client"
  fi
  if [ "$mode" != mpi-srun ]; then
    end=$(job_end)
    [[ "$end" == *"JobState=COMPLETED ExitCode=0:0"* ]] || fail "job $job ended: $end"
  else
    timeout 30 tail --pid="$pid" -f /dev/null || fail "srun still running 30 s after shutdown"
    wait "$pid" || fail "srun exited $?"
  fi
  pid=""
  check_ranks "$dir/job.out"
  ;;
program-sbatch|program-srun)
  mpiexec=$3 program=$4
  if [ "$mode" = program-sbatch ]; then
    job=$(sbatch --parsable -n 4 -t 2 -o "$dir/job.out" \
      --wrap "MPIEXEC_TIMEOUT=90 $mpiexec -n 4 $program initialize mpi") || fail "sbatch"
    started+=("$job")
    end=$(job_end)
    [[ "$end" == *"JobState=COMPLETED ExitCode=0:0"* ]] || fail "job $job ended: $end"
  else
    timeout 90 srun --mpi=pmi2 -n 4 -O -t 2 "$program" initialize mpi >"$dir/job.out" 2>&1 ||
      fail "srun exited $?"
  fi
  grep -q "rank 1: done, 0 failures" "$dir/job.out" || fail "the program did not finish its checks"
  grep -q "FAILED" "$dir/job.out" && fail "a check failed"
  ;;
docs)
  docs=$3; shift 3
  # The user guide's Slurm page shows these scripts: every line of each must be there as it is.
  for f in "$docs"/*.sbatch; do
    while IFS= read -r line; do
      grep -qxF -- "$line" "$docs/../guide/slurm.md" ||
        fail "docs/guide/slurm.md lacks '$line' of $(basename "$f")"
    done <"$f"
  done
  while [ "$1" != -- ]; do PATH="$1:$PATH"; shift; done
  lib=$2 client=$3 program=$4
  ln -s "$lib" "$dir/libmytasks.so" && ln -s "$program" "$dir/my_program" && cd "$dir" || exit 1
  run_job() {  # SCRIPT [ARGS]: submits it, prints its id
    sbatch --parsable -o "$dir/$(basename "$1").out" "$docs/$1" "${@:2}" || fail "sbatch $1"
  }
  # In this shell, not a subshell: the clean-up cancels whatever of them is left.
  submit() { last=$(run_job "$@") || exit 1; started+=("$last"); }
  submit taskwire-mpi.sbatch; job=$last
  wait_for_file sched.json
  timeout 60 "$client" compute sched.json >"$dir/client.log" 2>&1 || fail "client of taskwire-mpi.sbatch"
  end=$(job_end)
  [[ "$end" == *"JobState=COMPLETED ExitCode=0:0"* ]] || fail "taskwire-mpi.sbatch ended: $end"
  rm -f sched.json
  submit scheduler.sbatch; job=$last
  submit workers.sbatch; workers=$last
  wait_for_file sched.json
  # Both workers first: one that comes after the shutdown would wait out its 60 s.
  for _ in $(seq 1 300); do
    [ "$(grep -c 'joined with' scheduler.sbatch.out 2>/dev/null)" -ge 2 ] && break; sleep 0.1
  done
  timeout 60 "$client" compute sched.json >>"$dir/client.log" 2>&1 || fail "client of scheduler.sbatch"
  end=$(job_end)
  [[ "$end" == *"JobState=COMPLETED ExitCode=0:0"* ]] || fail "scheduler.sbatch ended: $end"
  job=$workers end=$(job_end)
  [[ "$end" == *"JobState=COMPLETED ExitCode=0:0"* ]] || fail "workers.sbatch ended: $end"
  submit program.sbatch initialize mpi; job=$last
  end=$(job_end)
  [[ "$end" == *"JobState=COMPLETED ExitCode=0:0"* ]] || fail "program.sbatch ended: $end"
  grep -q "rank 1: done, 0 failures" program.sbatch.out || fail "program.sbatch: no checks"
  ;;
*) echo "usage: launch_test.sh STATE_DIR MODE ..."; exit 2 ;;
esac
started=()
# Nothing of this test left in the queue (an srun's own allocation takes a moment to go).
for _ in $(seq 1 100); do left=$(squeue -h -o %i 2>/dev/null); [ -z "$left" ] && break; sleep 0.1; done
[ -z "$left" ] || fail "jobs still queued 10 s after the end: $left"
echo "PASSED $mode"
