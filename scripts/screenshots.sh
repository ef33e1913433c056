#!/usr/bin/env bash
# Screenshots of every workbench panel, taken under Xvfb at a laptop size and a desktop size,
# including the checkpoint-switch sequence: scripts/screenshots.sh [OUTDIR] [SIZE ...]
# SIZE is WIDTHxHEIGHT (default: 1366x768 1600x1000); each size gets OUTDIR/SIZE/.
# SCREENSHOT_TOUR=tasks plays only the sequence-task tour (embed, rerank, classify, export).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-screenshots}"
shift || true
sizes=("$@")
[ ${#sizes[@]} -eq 0 ] && sizes=(1366x768 1600x1000)
cmake --build build --target scalescope-screenshots scalescope-cli -j 2 >/dev/null
for size in "${sizes[@]}"; do
    mkdir -p "$out/$size"
    xvfb-run -a -s "-screen 0 ${size}x24" ./build/tests/scalescope-screenshots "$out/$size" "$size" ${SCREENSHOT_TOUR:-} \
        | tee "$out/$size/tour.txt"
done
