#!/usr/bin/env bash
# Every way a rank can leave an MPI job launched with taskwire::mpi::initialize (4 ranks:
# scheduler, the program, two workers; tests/launch/exits_program.cpp):
#   exits_test.sh SCENARIO MPIEXEC EXITS_PROGRAM
#   exit-client      the program calls exit(3) with its cluster up: the job ends 3, cleanly
#   leak-session     the program returns 0 from main, its session leaked: the job ends 0
#   worker-exit      a task calls exit(5) on a worker rank
#   worker-quit      a task ends its worker rank with _exit(0) (a normal status, no handler)
#   worker-kill      a task SIGKILLs its worker rank
#   sigkill          the test SIGKILLs worker rank 2's process
#   sigterm          the test sends SIGTERM to worker rank 2 alone (to the pid Hydra started,
#                    its watcher, which passes it on): every rank exits 143
#   startup-sigterm  SIGTERM to mpiexec while ranks 0-2 hold their wake-board names in start-up
#   startup-sigkill  SIGKILL to rank 0's process then: its watcher names it; the names its
#                    peers leave (Hydra SIGKILLs them) are removed by the next launch's start-up
#   program-abort    the program calls MPI_Abort(MPI_COMM_WORLD, 7): the job ends 7, and no
#                    taskwire line names a rank as dead (MPICH's own line names it, when
#                    Hydra's teardown does not lose it: 1 run in 6, with or without watchers)
# Each rank of initialize runs as the child of its watcher (comm/mpi/rank_watcher.hpp): the
# pid a rank prints before initialize is its watcher's, the rank's own process is that one's
# child (found while the job runs).
# Judged: the job ends within 30 s of the event (MPIEXEC_TIMEOUT=60 is the safety net), its
# output names the rank that left and why, mpiexec's status, no process of the job (its
# process tree) alive 10 s after mpiexec returned, and no /dev/shm/taskwire-wake-PID of its pids.
# Prints FAILED on a failure (ctest's FAIL_REGULAR_EXPRESSION) and exits 1.
set -uo pipefail
scenario=$1 mpiexec=$2 program=$3
dir=$(mktemp -d "$PWD/exits-test-XXXXXX")  # the build tree, out of reach of sweeps of /tmp
job=
declare -A seen=()  # every pid of the job (mpiexec, Hydra's proxy, the ranks), sampled
declare -A rank_process=()  # rank -> its own process (its watcher's child), sampled
# Hydra puts each process in a session of its own: the job is mpiexec's process tree.
descendants() {
  local p
  for p in $(pgrep -P "$1" 2>/dev/null); do
    echo "$p"
    descendants "$p"
  done
}
sample() {
  local p
  [ -n "$job" ] || return 0
  for p in "$job" $(descendants "$job") $(sed -n 's/^exits-test: rank [0-9] pid \([0-9]*\)$/\1/p' "$dir/out"); do
    seen[$p]=1
  done
  note_rank_processes
}
started_pid() { sed -n "s/^exits-test: rank $1 pid \([0-9]*\)$/\1/p" "$dir/out" | head -1; }
note_rank_processes() {
  local r w c
  for r in 0 1 2 3; do
    [ -n "${rank_process[$r]:-}" ] && continue
    w=$(started_pid "$r")
    [ -n "$w" ] && [ "$(cat "/proc/$w/comm" 2>/dev/null)" = taskwire-watch ] || continue
    c=$(pgrep -P "$w" 2>/dev/null | head -1)
    [ -n "$c" ] && rank_process[$r]=$c
  done
}
alive() {  # the job's processes still running (zombies do not count: they hold nothing)
  local p
  for p in "${!seen[@]}"; do
    [ -e "/proc/$p" ] && [ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" != Z ] && echo "$p"
  done
}
cleanup() {
  local p
  for p in $(alive); do kill -9 "$p" 2>/dev/null; done
  rm -rf "$dir"
}
trap cleanup EXIT
fail() {
  echo "FAILED $scenario: $*"
  echo "--- job output"
  cat "$dir/out"
  exit 1
}

# wait_for SECONDS CONDITION...: polls CONDITION about every 0.1 s, sampling the job's
# processes, for SECONDS of wall time (sampling itself takes time on a loaded machine).
wait_for() {
  local end=$((SECONDS + $1))
  shift
  for (( ; ; )); do
    sample
    "$@" && return 0
    [ "$SECONDS" -ge "$end" ] && return 1
    sleep 0.1
  done
}
job_ended() { ! kill -0 "$job" 2>/dev/null; }
said() { grep -Eq "$1" "$dir/out"; }
# The pid of rank R's own process: its watcher's child (none yet: the pid it printed).
rank_pid() { echo "${rank_process[$1]:-$(started_pid "$1")}"; }
wake_names_of_ranks() {  # all of ranks 0-2 hold their wake-board names (start-up)
  local r p
  for r in 0 1 2; do
    p=$(rank_pid "$r")
    [ -n "$p" ] && [ -e "/dev/shm/taskwire-wake-$p" ] || return 1
  done
}

mode=$scenario
case $scenario in
  sigkill | sigterm) mode=forever ;;
  startup-*) mode=slow-start ;;
esac
: >"$dir/out"
EXITS_LOG_LEVEL=warn MPIEXEC_TIMEOUT=60 setsid "$mpiexec" -n 4 "$program" "$mode" >"$dir/out" 2>&1 &
job=$!

case $scenario in
  sigkill | sigterm)
    wait_for 30 said "^exits-test: cluster up" || fail "the cluster did not come up within 30 s"
    [ -n "${rank_process[2]:-}" ] || fail "rank 2 (pid $(started_pid 2)) has no watcher"
    if [ "$scenario" = sigkill ]; then kill -KILL "$(rank_pid 2)"; else kill -TERM "$(started_pid 2)"; fi
    ;;
  startup-*)
    wait_for 30 wake_names_of_ranks || fail "ranks 0-2 did not reach start-up within 30 s"
    victim=$(rank_pid 0)
    if [ "$scenario" = startup-sigterm ]; then kill -TERM "$job"; else kill -KILL "$victim"; fi
    ;;
esac
wait_for 30 job_ended || fail "the job still runs 30 s after the event"
wait "$job"
rc=$?
sample
finished_job=$job
job=
# Its processes: none may outlive mpiexec by more than 10 s.
wait_for 10 eval '[ -z "$(alive)" ]' || fail "processes of the job still alive 10 s after it ended: $(alive)"

# expect STATUS PATTERN WHAT: mpiexec's status (a number, or "nonzero") and a line naming
# the rank that left.
expect() {
  if [ "$1" = nonzero ]; then
    [ "$rc" -ne 0 ] || fail "mpiexec exited 0 although a rank left"
  else
    [ "$rc" -eq "$1" ] || fail "mpiexec exited $rc, not $1"
  fi
  said "$2" || fail "no line names $3"
}
leaver=$(sed -n 's/^exits-test: rank \([0-9]\) ends by.*/\1/p' "$dir/out" | head -1)
worker="\(worker on host [^)]*\)"
died="died without shutting down: pid"
# A rank that died without GOODBYE is named by its watcher (the process Hydra started, whose
# child the rank's process is) before Hydra can know of the death (docs/faults.md, "MPI
# exits"): every time, with its rank, pid and how it ended. The other ranks may name it too,
# woken through its pidfd, if Hydra's SIGKILL does not reach them first (it reaped the
# watcher); no line may name another rank, or another pid for this one, as dead.
lost_line() {  # lost_line R: the lines naming rank R as dead, from the taskwire ranks
  grep -E "^taskwire: rank $1 $worker $died [0-9]+|rank [0-9]+: rank $1 died without saying GOODBYE: pid [0-9]+" "$dir/out"
}
named=
# named_lost R HOW: checks the above for rank R, ended as HOW.
named_lost() {
  local r=$1 how=$2 pid others
  [ "$rc" -ne 0 ] || fail "mpiexec exited 0 although rank $r left"
  [ -n "${rank_process[$r]:-}" ] || fail "rank $r (pid $(started_pid "$r")) had no watcher"
  pid=$(rank_pid "$r")
  others=$(grep -E "^taskwire: rank [0-9]+ \(.*$died|died without saying GOODBYE" "$dir/out" |
    grep -Ev "(^taskwire: rank $r |: rank $r died without saying GOODBYE).*pid $pid( |;|$)")
  [ -z "$others" ] && [ -z "$(lost_line "$r" | grep -v "pid $pid")" ] ||
    fail "a line names another rank or pid as dead (rank $r was pid $pid): $others"
  lost_line "$r" | grep -q "pid $pid $how" || fail "no line names rank $r, pid $pid and how it ended ($how)"
  named="rank $r, pid $pid and how it ended named by $(lost_line "$r" | grep -c "pid $pid $how") line(s)"
}
case $scenario in
  exit-client) expect 3 "rank 1: the program exited \(status 3\) with its cluster still up" "rank 1" ;;
  leak-session) expect 0 "rank 1: the program exited \(status 0\) with its cluster still up" "rank 1" ;;
  worker-exit) expect nonzero "taskwire: rank $leaver $worker called exit\(5\)" "rank '$leaver', exit(5)" ;;
  worker-quit) named_lost "$leaver" "exited with status 0" ;;
  worker-kill) named_lost "$leaver" "was killed by SIGKILL" ;;
  sigkill) named_lost 2 "was killed by SIGKILL" ;;
  sigterm)
    # Every rank ends as after a Ctrl-C (143), none killed; the others name rank 2 and its
    # signal. Rank 2's own line may not make it out: under load the job can end before its
    # output is forwarded (1 run in ~12 with ctest -j 2), so it is not required.
    expect 143 "rank 2 \(worker[^)]*\)(: SIGTERM \(Terminated\) received| received SIGTERM)" \
      "rank 2 and its SIGTERM"
    said "rank [013]: rank 2 $worker received SIGTERM \(Terminated\): ending the job" ||
      fail "no other rank named rank 2 and its SIGTERM"
    said "BAD TERMINATION" && fail "a rank was killed" ;;
  program-abort)
    [ "$rc" -eq 7 ] || fail "mpiexec exited $rc, not 7"
    grep -E "died without|died in MPI start-up|died after" "$dir/out" &&
      fail "a line names a rank as dead after the program's MPI_Abort" ;;
  startup-sigterm)
    expect nonzero "taskwire: rank [012] received SIGTERM \(Terminated\) during MPI start-up" "a rank in start-up" ;;
  startup-sigkill)
    said "^taskwire: rank 0 \(scheduler on host [^)]*\) died in MPI start-up: pid $(rank_pid 0) was killed by SIGKILL" ||
      fail "no line names rank 0 (pid $(rank_pid 0)), killed in start-up"
    # Hydra SIGKILLs the others: nothing of theirs runs, their names stay until a start-up
    # on this host sweeps them (a 1-rank launch: MpiEnvironment starts, then initialize
    # refuses a job that small).
    MPIEXEC_TIMEOUT=30 "$mpiexec" -n 1 "$program" exit-client >"$dir/sweep" 2>&1
    grep -q "needs at least 3 MPI ranks" "$dir/sweep" || { cat "$dir/sweep"; fail "the sweeping launch did not start"; } ;;
esac
for p in "${!seen[@]}"; do
  [ -e "/dev/shm/taskwire-wake-$p" ] && fail "/dev/shm/taskwire-wake-$p of the job's pid $p is left"
done
grep -E "^taskwire:|\] rank [0-9]+( \([a-z]+\))?: " "$dir/out" | grep -v "exits-test" | head -8
echo "$scenario: exit $rc, ${#seen[@]} processes of job $finished_job gone, no wake-board name left${named:+; $named}"
