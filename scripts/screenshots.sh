#!/usr/bin/env bash
# Screenshots of every workbench panel, taken under Xvfb: scripts/screenshots.sh [OUTDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-screenshots}"
cmake --build build --target scalescope-screenshots -j 2 >/dev/null
xvfb-run -a -s "-screen 0 1400x950x24" ./build/tests/scalescope-screenshots "$out"
