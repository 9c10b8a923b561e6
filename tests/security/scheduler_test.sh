#!/usr/bin/env bash
# A real taskwire-scheduler process against peers that never authenticate.
#   scheduler_test.sh bigframe SCHEDULER PROBE
#     one raw connection announces an 8 GiB frame: the scheduler's RSS barely moves and it
#     still serves a client (scheduler_probe checks both)
#   scheduler_test.sh silent SCHEDULER PROBE
#     the scheduler runs at `ulimit -n 256` with a 60 s handshake timeout; 300 raw connections
#     that never speak come first, then a client with a 20 s connect timeout, which must be
#     served: without the pending-handshake cap the silent ones would hold every descriptor
#     until their 60 s timeouts
#   scheduler_test.sh silent-tls SCHEDULER PROBE CERT_DIR
#     the same at a tls:// port (CERT_DIR from make_test_certs.sh): connections still in their
#     TLS handshake count against the same cap
set -uo pipefail
mode=$1 scheduler=$2 probe=$3 certs=${4:-}
dir=$(mktemp -d /tmp/taskwire-security-XXXXXX)
pid=
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
fail() { echo "FAILED $*"; echo "--- scheduler log"; tail -n 40 "$dir/scheduler.log"; exit 1; }

export TASKWIRE_AUTH_TOKEN="tok-$$-$RANDOM-$RANDOM"
case "$mode" in
  bigframe)
    "$scheduler" --listen tcp://127.0.0.1:0 --scheduler-file "$dir/s.json" --log-level info \
      >"$dir/scheduler.log" 2>&1 &
    pid=$! ;;
  silent)
    (ulimit -n 256 && TASKWIRE_HANDSHAKE_TIMEOUT_MS=60000 exec "$scheduler" \
      --listen tcp://127.0.0.1:0 --scheduler-file "$dir/s.json" --log-level info \
      >"$dir/scheduler.log" 2>&1) &
    pid=$! ;;
  silent-tls)
    (ulimit -n 256 && TASKWIRE_HANDSHAKE_TIMEOUT_MS=60000 exec "$scheduler" \
      --listen tls://127.0.0.1:0 --tls-cert "$certs/node.pem" --tls-key "$certs/node.key" \
      --scheduler-file "$dir/s.json" --log-level info >"$dir/scheduler.log" 2>&1) &
    pid=$!
    export TASKWIRE_TLS_CA_FILE="$certs/ca.pem" ;;  # for the probe's client only
  *) echo "usage: $0 bigframe|silent SCHEDULER PROBE | silent-tls SCHEDULER PROBE CERT_DIR" >&2
     exit 2 ;;
esac
for _ in $(seq 1 300); do [ -s "$dir/s.json" ] && break; sleep 0.1; done
[ -s "$dir/s.json" ] || fail "no scheduler file after 30 s"
address=$(grep -o 't[cl][ps]://[^"]*' "$dir/s.json" | head -n 1)

if [ "$mode" = bigframe ]; then
  timeout 60 "$probe" bigframe "$address" "$pid" || fail "bigframe probe"
else
  timeout 60 "$probe" silent "$address" 300 30 || fail "silent probe"
  grep -q "dropped" "$dir/scheduler.log" || fail "no eviction logged"
  echo "scheduler log: $(grep -c warn "$dir/scheduler.log") warning lines; first eviction:"
  grep -m1 "dropped" "$dir/scheduler.log"
fi
kill -0 "$pid" 2>/dev/null || fail "the scheduler died"
echo "passed"
