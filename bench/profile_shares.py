#!/usr/bin/env python3
"""Shares of a `perf record` profile of scalescope-bench, by what the time was spent on.

Record with oneDNN's JIT kernels named (ONEDNN_JIT_PROFILE=2 writes /tmp/perf-PID.map):

    ONEDNN_JIT_PROFILE=2 perf record -e cpu-clock -F 1000 -o fp8.data \
        build/bench/scalescope-bench --workdir /tmp/ssb --profile fp8 --repeats 20
    python3 bench/profile_shares.py fp8.data

libgomp's samples are OpenMP threads spin-waiting for each other (their share follows the machine's
load, not the code), so every other share is also given out of the samples outside libgomp; the
non-GEMM share is what is neither oneDNN's GEMM kernels nor libgomp, out of those.
"""
import collections
import re
import subprocess
import sys


def category(dso, symbol):
    if "libgomp" in dso:
        return "spin (libgomp)"
    if dso.startswith("[JIT]") or "perf-" in dso:
        if re.search(r"brgemm|gemm|matmul|brg", symbol):
            return "oneDNN GEMM kernels (JIT)"
        return "oneDNN other JIT kernels (eltwise GELU, reorders)"
    if "libtorch" in dso or "libc10" in dso:
        return "LibTorch"
    if "sleef" in dso:
        return "Sleef (LibTorch's exp)"
    if dso.startswith("scalescope") or "scalescope" in symbol:
        return "engine: fused GELU / softmax / LayerNorm" if "fused_lanes" in symbol else "engine: other kernels"
    if "kernel" in dso:
        return "kernel (page faults, scheduling)"
    return "other (loader, libc, ...)"


def shares(path):
    report = subprocess.run(["perf", "report", "-i", path, "--no-children", "--sort", "dso,sym", "--stdio",
                             "-t", "|", "-g", "none"], capture_output=True, text=True, check=True).stdout
    totals = collections.Counter()
    for line in report.splitlines():
        parts = line.split("|")
        if line.startswith("#") or len(parts) < 3:
            continue
        symbol = re.sub(r"^\[.\]\s*", "", parts[2].strip())
        totals[category(parts[1].strip(), symbol)] += float(parts[0].strip().rstrip("%"))
    return totals


def main():
    for path in sys.argv[1:]:
        totals = shares(path)
        working = sum(totals.values()) - totals["spin (libgomp)"]
        print(f"== {path}")
        for name, share in totals.most_common():
            of_working = "" if name.startswith("spin") else f"  ({100 * share / working:5.1f} % of non-spin)"
            print(f"  {name:52s} {share:6.2f} %{of_working}")
        non_gemm = working - totals["oneDNN GEMM kernels (JIT)"]
        print(f"  non-GEMM share of the non-spin samples: {100 * non_gemm / working:.1f} %")


if __name__ == "__main__":
    main()
