#!/usr/bin/env bash
# The single list of what ScaleScope needs on Debian 12, for building, testing and running.
# CI and the README both call this; anything installed by hand elsewhere is a bug.
set -euo pipefail

if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
export DEBIAN_FRONTEND=noninteractive

packages=(
  # toolchain
  build-essential cmake ninja-build ccache pkg-config
  # libraries
  qt6-base-dev qt6-base-dev-tools qt6-svg-dev libqcustomplot-dev
  libtorch-dev nlohmann-json3-dev
  # oneDNN's headers (its library comes with LibTorch): fp8 mode's bf16 x bf16 -> float32 GEMMs.
  libdnnl-dev
  # Debian's LibTorch uses the reference BLAS (~4 GFLOP/s) until OpenBLAS is installed (~90 GFLOP/s).
  libopenblas0-pthread
  # GUI tests and screenshots
  xvfb xauth imagemagick fonts-dejavu-core
  # scripts/long_functions.py, which the test command runs
  python3
)

# --dev adds the development tools: PyTorch for the demo training recipe and the benchmark's peer,
# clang with libFuzzer and the sanitizer runtimes for fuzzing and sanitizer builds.
if [ "${1:-}" = "--dev" ]; then
  packages+=(python3-torch clang-14 libclang-rt-14-dev llvm-14 clang-format-14 clang-tidy-14 hyperfine)
fi

$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${packages[@]}"

# Make sure the alternatives point LibTorch's BLAS at OpenBLAS (the package does this on install,
# but a machine that had the reference BLAS selected by hand keeps its choice otherwise).
arch_triplet=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -dumpmachine)
for alt in "libblas.so.3-${arch_triplet}" "liblapack.so.3-${arch_triplet}"; do
  candidate=$(update-alternatives --list "$alt" 2>/dev/null | grep openblas | head -n 1 || true)
  if [ -n "$candidate" ]; then $SUDO update-alternatives --set "$alt" "$candidate" >/dev/null; fi
done
