#!/usr/bin/env bash
# Sets up (Debian packages), builds and runs the main job: a local cluster of 5 MPI ranks
# (scheduler, client, 3 workers) computing sum((X + X^T)^T) for a blocked random matrix, once
# over MPI and once over TCP in the same launch, checked against a direct computation; then
# round trips through the Comm interface over MPI and TCP next to raw MPI / raw sockets.
set -euo pipefail
cd "$(dirname "$0")"
./third_party/install-deps.sh
export CCACHE_DIR="${CCACHE_DIR:-$PWD/.cache/ccache}"
cmake --preset release >/dev/null
cmake --build --preset release -j "${TASKWIRE_JOBS:-2}" --target taskwire-bench
bench=./build/release/bench/taskwire-bench
echo "== a local cluster, MPI vs TCP on the same work (mpiexec.mpich -n 5: scheduler, client, 3 workers)"
mpiexec.mpich -n 5 "$bench" array --n "${TASKWIRE_DEMO_N:-10000}" --blocks 8
echo
echo "== round trips through the Comm interface, MPI vs TCP (mpiexec.mpich -n 2)"
mpiexec.mpich -n 2 "$bench" latency --backend mpi,raw-mpi,tcp,raw-tcp --seconds-per-size 0.2
