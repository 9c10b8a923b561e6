#!/usr/bin/env bash
# Runs bench/metg.sh with the given arguments; passes when it exits 0, prints its METG table,
# and its CSV (--csv, the first argument) has a row for each of the three systems.
set -uo pipefail
csv="$1"; shift
out="$("$@" --csv "$csv" 2>&1)"; rc=$?
echo "$out"
[ $rc = 0 ] || { echo "FAILED: metg.sh exited $rc"; exit 1; }
echo "$out" | grep -q "smallest passing" || { echo "FAILED: no METG table"; exit 1; }
for s in nonblock taskwire-mpi taskwire-tcp; do
  grep -q "^$s," "$csv" || { echo "FAILED: no CSV row for $s"; exit 1; }
done
