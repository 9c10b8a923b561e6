#!/usr/bin/env bash
# Sets up (Debian packages), builds and runs the main job: until the cluster lands, the
# latency comparison of the comm backends against raw baselines in one run.
set -euo pipefail
cd "$(dirname "$0")"
./third_party/install-deps.sh
export CCACHE_DIR="${CCACHE_DIR:-$PWD/.cache/ccache}"
cmake --preset release >/dev/null
cmake --build --preset release -j "${TASKWIRE_JOBS:-2}" --target taskwire-bench
exec ./build/release/bench/taskwire-bench latency --backend tcp,raw-tcp "$@"
