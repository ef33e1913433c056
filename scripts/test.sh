#!/usr/bin/env bash
# Installs the dependencies, builds, runs every test suite, and fails on a production function over
# 80 lines (scripts/long_functions.py). The README's test command; CI runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash packaging/install-deps.sh
bash scripts/build.sh
(cd build && QT_QPA_PLATFORM=offscreen ctest --output-on-failure --label-exclude bench -j 2)
python3 scripts/long_functions.py --self-test
python3 scripts/long_functions.py core ui app bench charts
