#!/usr/bin/env bash
# Tests of the emulated hosts themselves: hosts_test.sh MODE, MODE one of
#   network   hostnames, name resolution, reachability over the bridge and only over it
#   teardown  nothing is left behind after COMMAND succeeds, fails, is killed by timeout, after
#             SIGTERM to with-hosts, and after SIGKILL of with-hosts (the next start cleans up)
#   parallel  two instances at once get their own numbers and subnets and cannot reach each other
#   mpi       mpiexec.mpich starts one rank per host through netns-ssh
#   rate      --rate puts a tbf qdisc of that rate on both ends of every veth
# Prints FAILED on a failure (ctest's FAIL_REGULAR_EXPRESSION) and exits non-zero.
set -uo pipefail

dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
run=${TASKWIRE_HOSTS_RUN:-/run/taskwire-hosts}
failures=0

check() {
  local what=$1
  shift
  if "$@" >/dev/null; then echo "ok: $what"; else echo "FAILED: $what"; failures=$((failures + 1)); fi
}

fails() { ! "$@"; }

# Checks run INSIDE with-hosts (this script is its own COMMAND with mode inner-*).
inner_network() {
  local n=$TASKWIRE_HOSTS_INSTANCE on="$dir/on-host" i
  for i in 1 2 3; do
    check "h$i's hostname is h$i" test "$("$on" "h$i" hostname)" = "h$i"
    check "h$i resolves h3 to 198.18.$n.3" \
      test "$("$on" "h$i" getent hosts h3 | awk '{print $1}')" = "198.18.$n.3"
    check "h$i resolves its own name to its address" \
      test "$("$on" "h$i" sh -c 'getent hosts "$(hostname)"' | awk '{print $1}')" = "198.18.$n.$i"
  done
  check "on-host keeps the working directory" test "$(cd /tmp && "$on" h1 pwd)" = /tmp
  check "on-host passes the environment" \
    test "$(TASKWIRE_PROBE=x42 "$on" h2 sh -c 'echo $TASKWIRE_PROBE')" = x42
  local before after
  before=$(cat "/sys/class/net/tw${n}h1b/statistics/rx_packets")
  check "h1 pings h2 by name" "$on" h1 ping -c 3 -i 0.2 -W 2 -q h2
  after=$(cat "/sys/class/net/tw${n}h1b/statistics/rx_packets")
  check "the pings crossed h1's veth into the bridge ($before -> $after packets)" \
    test $((after - before)) -ge 3
  check "h3 pings h1 by address" "$on" h3 ping -c 1 -W 2 -q "198.18.$n.1"
  ip link set "tw${n}h2b" down
  check "with h2's veth down, h1 cannot reach h2" fails "$on" h1 ping -c 1 -W 1 -q h2
  ip link set "tw${n}h2b" up
  check "h1 has no route outside its subnet" fails "$on" h1 ip route get 198.19.0.1
  check "h1 does not see the root namespace's links" \
    test "$("$on" h1 ip -o link show | wc -l)" -eq 2
  check "netns-ssh runs a command string in its host, as ssh" \
    test "$("$dir/netns-ssh" -x -o BatchMode=yes "h2" echo '$(hostname)' "a  b")" = "h2 a b"
  check "netns-ssh takes an address for a host" \
    test "$("$dir/netns-ssh" "198.18.$n.3" hostname)" = h3
  check "on-host refuses a host that does not exist" fails "$on" h9 true 2>/dev/null
}

inner_parallel() {
  local outer=$TASKWIRE_HOSTS_INSTANCE
  "$dir/with-hosts" 2 -- bash -c '
    test "$TASKWIRE_HOSTS_INSTANCE" != "$1" || { echo "FAILED: same instance $1 twice"; exit 1; }
    "$TASKWIRE_HOSTS_DIR/on-host" h2 ping -c 1 -W 2 -q h1 || { echo "FAILED: inner h2 -> h1"; exit 1; }
    ! "$TASKWIRE_HOSTS_DIR/on-host" h1 ping -c 1 -W 1 -q "198.18.$1.1" ||
      { echo "FAILED: inner h1 reached the other instance"; exit 1; }
    echo "ok: instances $1 and $TASKWIRE_HOSTS_INSTANCE side by side, apart"' sh "$outer"
  check "the inner instance's checks" test $? -eq 0
  check "the outer instance still works" "$dir/on-host" h2 ping -c 1 -W 2 -q h1
}

# One rank per host, rank i on h(i+1), with mpiexec in the root namespace (hydra told the
# bridge, whose address the hosts reach) and with mpiexec inside h1.
inner_mpi() {
  local expected="0 h1
1 h2
2 h3
3 h4" launch got
  launch=(mpiexec.mpich -launcher ssh -launcher-exec "$dir/netns-ssh" -hosts h1,h2,h3,h4 -n 4)
  got=$(timeout 60 "${launch[@]}" -iface "$TASKWIRE_HOSTS_BRIDGE" \
    sh -c 'echo "$PMI_RANK $(hostname)"' | sort)
  check "mpiexec in the root namespace with -iface: one rank per host ($got)" \
    test "$got" = "$expected"
  got=$(timeout 60 "$dir/on-host" h1 "${launch[@]}" sh -c 'echo "$PMI_RANK $(hostname)"' | sort)
  check "mpiexec inside h1: one rank per host ($got)" test "$got" = "$expected"
}

inner_rate() {
  local n=$TASKWIRE_HOSTS_INSTANCE i
  for i in 1 2; do
    check "h$i's eth0 is capped at 100 Mbit/s" \
      sh -c "tc -n tw${n}h$i qdisc show dev eth0 | grep -q 'tbf .*rate 100Mbit'"
    check "the bridge side of h$i's veth is capped at 100 Mbit/s" \
      sh -c "tc qdisc show dev tw${n}h${i}b | grep -q 'tbf .*rate 100Mbit'"
  done
  check "h1 pings h2 through the caps" "$dir/on-host" h1 ping -c 1 -W 2 -q h2
}

# What instance $1 may have owned: prints whatever is still there.
leftovers() {
  local n=$1
  ip netns list | awk -v p="^tw${n}h[0-9]+$" '$1 ~ p {print "netns " $1}'
  ip -o link show | awk -F': ' -v p="^(twbr${n}|tw${n}h[0-9]+b)(@|$)" '$2 ~ p {print "link " $2}'
  ls -d /etc/netns/tw"${n}"h* 2>/dev/null
}

wait_for_file() {
  local i
  for i in $(seq 300); do
    [ -s "$1" ] && return 0
    sleep 0.1
  done
  return 1
}

# Judges instance $2 (recorded by a with-hosts of pid $1 that has ended): under the allocation
# lock, so nobody takes the number meanwhile. Returns 2 when another with-hosts took the
# number in between (the scenario is then run again), else whether nothing was left.
judge_teardown() {
  local pid=$1 n=$2 owner rest
  exec 8>"$run/.lock"
  flock -w 60 8 || { echo "FAILED: could not lock $run/.lock"; return 1; }
  if [ -d "$run/$n" ]; then
    owner=$(cat "$run/$n/owner" 2>/dev/null)
    if [ "${owner%% *}" != "$pid" ]; then exec 8>&-; return 2; fi
    echo "left: $run/$n"
  fi
  rest=$(leftovers "$n")
  exec 8>&-
  [ -z "$rest" ] || { echo "left behind by instance $n:"; echo "$rest"; return 1; }
}

# scenario NAME EXPECTED_STATUS HOW: HOW is success|failure|timeout|sigterm|sigkill.
scenario() {
  local name=$1 expected=$2 how=$3 attempt file pid status verdict
  for attempt in 1 2 3 4 5; do
    file=$(mktemp)
    local body='echo "$TASKWIRE_HOSTS_INSTANCE" >"$0.tmp" && mv "$0.tmp" "$0"; '
    case $how in
      success) body+='"$TASKWIRE_HOSTS_DIR/on-host" h1 true' ;;
      failure) body+='"$TASKWIRE_HOSTS_DIR/on-host" h1 sh -c "exit 3"' ;;
      timeout) body+='timeout -s KILL 1 "$TASKWIRE_HOSTS_DIR/on-host" h1 sleep 60' ;;
      sigterm|sigkill) body+='"$TASKWIRE_HOSTS_DIR/on-host" h2 sleep 60 & wait' ;;
    esac
    "$dir/with-hosts" 2 -- bash -c "$body" "$file" &
    pid=$!
    if [ "$how" = sigterm ] || [ "$how" = sigkill ]; then
      wait_for_file "$file" || echo "FAILED: $name: with-hosts never ran its command"
      # The host's sleep must be running before the signal, or there is nothing to end.
      for _ in $(seq 100); do
        [ -n "$(ip netns pids "tw$(cat "$file")h2" 2>/dev/null)" ] && break
        sleep 0.1
      done
      if [ "$how" = sigterm ]; then kill -TERM "$pid"; else
        pkill -KILL -P "$pid"  # its COMMAND, which would otherwise outlive it
        kill -KILL "$pid"
      fi
    fi
    wait "$pid"
    status=$?
    if [ "$how" = sigkill ]; then
      # The next with-hosts (this one, or any other started meanwhile) cleans up after it.
      "$dir/with-hosts" 1 -- true
    fi
    check "$name: with-hosts exits $expected (got $status)" test "$status" -eq "$expected"
    judge_teardown "$pid" "$(cat "$file")"
    verdict=$?
    rm -f "$file"
    [ $verdict -eq 2 ] || break
    echo "instance reused by another with-hosts before the check: again"
  done
  check "$name: nothing left behind" test "$verdict" -eq 0
}

case ${1:-} in
  network) "$dir/with-hosts" 3 -- "$0" inner-network ;;
  parallel) "$dir/with-hosts" 2 -- "$0" inner-parallel ;;
  mpi) "$dir/with-hosts" 4 -- "$0" inner-mpi ;;
  rate) "$dir/with-hosts" 2 --rate 100mbit -- "$0" inner-rate ;;
  inner-rate) inner_rate ;;
  inner-network) inner_network ;;
  inner-mpi) inner_mpi ;;
  inner-parallel) inner_parallel ;;
  teardown)
    scenario "COMMAND succeeds" 0 success
    scenario "COMMAND fails" 3 failure
    scenario "COMMAND killed by timeout" 137 timeout
    scenario "SIGTERM to with-hosts" 143 sigterm
    scenario "SIGKILL of with-hosts" 137 sigkill
    ;;
  *) echo "usage: hosts_test.sh network|teardown|parallel|mpi|rate" >&2; exit 2 ;;
esac
status=$?
[ $failures -eq 0 ] && [ $status -eq 0 ] || { echo "FAILED: $failures check(s), status $status"; exit 1; }
echo "all passed"
