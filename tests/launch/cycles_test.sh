#!/usr/bin/env bash
# Consecutive launch-compute-shutdown cycles must never hang: cycles_test.sh MPIEXEC NP EXE N ARGS...
# Each launch gets 30 s (MPIEXEC_TIMEOUT) and must exit 0 with its checks passed.
set -uo pipefail
mpiexec=$1 np=$2 exe=$3 n=$4
shift 4
for i in $(seq 1 "$n"); do
  start=$(date +%s%N)
  out=$(MPIEXEC_TIMEOUT=30 "$mpiexec" -n "$np" "$exe" "$@" 2>&1)
  rc=$?
  took=$(( ($(date +%s%N) - start) / 1000000 ))
  if [ $rc -ne 0 ] || ! grep -q "done, 0 failures" <<<"$out"; then
    echo "FAILED cycle $i (exit $rc, ${took} ms):"
    echo "$out"
    exit 1
  fi
  echo "cycle $i: ok (${took} ms)"
done
