#!/usr/bin/env bash
# Installs taskwire's build and test dependencies from Debian 12's packages.
# Idempotent: does nothing (and needs no network) when everything is already present.
# Run as root, or with sudo available.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config dpkg-dev
  mpich libmpich-dev
  libboost-dev libboost-serialization-dev libboost-program-options-dev
  catch2 libfmt-dev libspdlog-dev libjemalloc-dev
  libssl-dev openssl
  iproute2 iputils-ping procps
  gnuplot-nox
  python3   # bench/trace_hops.py (the hop trace) and its test
  nlohmann-json3-dev
  prometheus curl chromium
  clang libclang-rt-14-dev
  slurm-wlm munge   # tests/slurm: a one-node Slurm the tests start and stop themselves
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then SUDO="sudo"; else
    echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"
