#!/usr/bin/env bash
# Configures and builds ScaleScope into ./build (Release with debug info, Ninja).
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache keys on paths relative to the checkout, so a fresh clone elsewhere (CI) reuses the cache.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
# Two compile jobs: LibTorch translation units need ~1.5 GB each, and the machine has 2 cores.
cmake --build build -j 2
