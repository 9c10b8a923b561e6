#!/usr/bin/env bash
# Sets up (Debian packages), builds and runs every test: the release build, then the same
# suite under AddressSanitizer + UBSan, then the fuzz targets briefly (clang; docs/fuzzing.md).
# The first two build as unity batches (presets ci-release, ci-asan in build/ci-*): about half
# the compile time of one file at a time (docs/measurements.md, "Build time").
# TASKWIRE_SKIP_ASAN=1 skips the sanitizer pass, TASKWIRE_SKIP_FUZZ=1 the fuzz pass.
set -euo pipefail
cd "$(dirname "$0")"
./third_party/install-deps.sh
export CCACHE_DIR="${CCACHE_DIR:-$PWD/.cache/ccache}"
jobs="${TASKWIRE_JOBS:-2}"

echo "== release build"
cmake --preset ci-release >/dev/null
cmake --build --preset ci-release -j "$jobs"
echo "== release tests"
ctest --preset ci-release -j 2

if [ "${TASKWIRE_SKIP_ASAN:-0}" != "1" ]; then
  echo "== asan+ubsan build"
  cmake --preset ci-asan >/dev/null
  cmake --build --preset ci-asan -j "$jobs"
  echo "== asan+ubsan tests"
  ctest --preset ci-asan -j 2 -LE install
fi

if [ "${TASKWIRE_SKIP_FUZZ:-0}" != "1" ]; then
  echo "== fuzz build/tests"
  cmake --preset fuzz >/dev/null
  cmake --build --preset fuzz -j "$jobs"
  ctest --preset fuzz -j 2
fi
