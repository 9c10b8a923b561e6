#!/usr/bin/env bash
# run_bench.sh CSV ROW-PREFIX... -- COMMAND...
# Runs a taskwire-bench COMMAND (which writes CSV) from scratch, and fails when it exits
# non-zero or when CSV lacks a row starting with one of the ROW-PREFIXes (e.g. "mpi,65536,").
set -uo pipefail
csv="$1"; shift
prefixes=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do prefixes+=("$1"); shift; done
[ $# -gt 1 ] || { echo "usage: run_bench.sh CSV ROW-PREFIX... -- COMMAND..." >&2; exit 2; }
shift
rm -f "$csv"  # the benchmarks append: start from an empty file
"$@"
rc=$?
[ $rc -eq 0 ] || { echo "run_bench: exit status $rc: $*" >&2; exit 1; }
[ -s "$csv" ] || { echo "run_bench: no CSV written to $csv" >&2; exit 1; }
status=0
for p in "${prefixes[@]}"; do
  if ! grep -q -- "^$p" "$csv"; then echo "run_bench: no row starting '$p' in $csv" >&2; status=1; fi
done
[ $status -eq 0 ] && echo "run_bench: $(($(wc -l < "$csv") - 1)) rows in $csv, all expected ones present"
exit $status
