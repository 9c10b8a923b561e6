#!/usr/bin/env bash
# Sets up (Debian packages), builds and runs the main job: the latency comparison of the MPI
# and TCP backends (and raw MPI / raw socket baselines) between two ranks of one mpiexec
# launch, then a local cluster (scheduler + 2 workers + client) running task workloads.
set -euo pipefail
cd "$(dirname "$0")"
./third_party/install-deps.sh
export CCACHE_DIR="${CCACHE_DIR:-$PWD/.cache/ccache}"
cmake --preset release >/dev/null
cmake --build --preset release -j "${TASKWIRE_JOBS:-2}" --target taskwire-bench
bench=./build/release/bench/taskwire-bench
echo "== round trips through the Comm interface, MPI vs TCP (mpiexec.mpich -n 2)"
mpiexec.mpich -n 2 "$bench" latency --backend mpi,raw-mpi,tcp,raw-tcp --seconds-per-size 0.3
echo
echo "== a local cluster over TCP: scheduler + 2 single-thread workers + client"
"$bench" tasks --backend tcp --repeats 1
