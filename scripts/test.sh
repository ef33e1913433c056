#!/usr/bin/env bash
# Installs the dependencies, builds, and runs every test suite (the README's test command; CI runs it).
set -euo pipefail
cd "$(dirname "$0")/.."
bash packaging/install-deps.sh
bash scripts/build.sh
cd build
QT_QPA_PLATFORM=offscreen ctest --output-on-failure --label-exclude bench -j 2
