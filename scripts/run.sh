#!/usr/bin/env bash
# Installs the dependencies, builds, and starts the ScaleScope workbench (the README's first command).
set -euo pipefail
cd "$(dirname "$0")/.."
bash packaging/install-deps.sh
bash scripts/build.sh
exec ./build/app/scalescope "$@"
