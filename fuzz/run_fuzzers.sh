#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (-fsanitize=fuzzer,address,undefined) and runs each for a
# bounded time, starting from the seed corpus in fuzz/corpus/<target>/.
#
#   fuzz/run_fuzzers.sh [SECONDS_PER_TARGET] [TARGET...]     (default 60 s, every target)
#
# Environment: BUILD_DIR (default build-fuzz in the repository), PARALLEL (fuzzers at once, default 1),
# CXX (default clang++-14). New corpus entries go to BUILD_DIR/corpus/<target> (the checked-in seeds
# stay as they are), crashing inputs to BUILD_DIR/artifacts/<target>/, logs to BUILD_DIR/logs/.
# A crashing input belongs in tests/data/fuzz_regressions/<target>/ once the bug is fixed.
# Exit status: non-zero when any fuzzer found a crash, leak, timeout or out-of-memory input.
set -euo pipefail
fuzz_dir="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$fuzz_dir/.." && pwd)"
seconds="${1:-60}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(safetensors config tokenizer_files tokenizer_encode wordpiece_files unigram_files squad runner_request
           thresholds task_datasets)
fi
build_dir="${BUILD_DIR:-$repo/build-fuzz}"
parallel="${PARALLEL:-1}"

CXX="${CXX:-clang++-14}" cmake -S "$fuzz_dir" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build_dir" -j 2

# Longest input per target: room for a realistic file of its kind, small enough to mutate quickly.
max_len_for() {
  case "$1" in
    tokenizer_files|wordpiece_files|unigram_files) echo 16384 ;;
    config|squad|runner_request|task_datasets) echo 8192 ;;
    *) echo 4096 ;;
  esac
}

run_one() {
  local target="$1"
  local work="$build_dir/corpus/$target" artifacts="$build_dir/artifacts/$target/"
  local log="$build_dir/logs/$target.log"
  mkdir -p "$work" "$artifacts" "$build_dir/logs"
  local status=0
  # UBSan already aborts (built with -fno-sanitize-recover); ASan leaks count as findings.
  ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    "$build_dir/fuzz_$target" "$work" "$fuzz_dir/corpus/$target" \
      -dict="$fuzz_dir/dicts/$target.dict" -max_total_time="$seconds" -max_len="$(max_len_for "$target")" \
      -rss_limit_mb=2048 -timeout=10 -artifact_prefix="$artifacts" -print_final_stats=1 \
      >"$log" 2>&1 || status=$?
  local done_line runs speed
  # The last status line: DONE after a full run, the last NEW/REDUCE/pulse line when a crash cut it short.
  done_line=$(grep -E '^#[0-9]+[[:space:]]+[A-Z]+[[:space:]]+cov: ' "$log" | tail -n 1 || true)
  runs=$(sed -n 's/^stat::number_of_executed_units:[[:space:]]*//p' "$log" | tail -n 1)
  speed=$(sed -n 's/^stat::average_exec_per_sec:[[:space:]]*//p' "$log" | tail -n 1)
  local cov ft
  cov=$(sed -n 's/.* cov: \([0-9]*\) .*/\1/p' <<<"$done_line")
  ft=$(sed -n 's/.* ft: \([0-9]*\) .*/\1/p' <<<"$done_line")
  printf '%-17s exit %-3s runs %-10s exec/s %-7s cov %-6s ft %-6s findings %s\n' "$target" "$status" \
    "${runs:-?}" "${speed:-?}" "${cov:-?}" "${ft:-?}" "$(find "$artifacts" -type f | wc -l)"
  return "$status"
}

failed=0
running=0
for target in "${targets[@]}"; do
  if [ ! -d "$fuzz_dir/corpus/$target" ]; then
    echo "unknown fuzz target '$target'" >&2
    exit 2
  fi
  run_one "$target" &
  running=$((running + 1))
  if [ "$running" -ge "$parallel" ]; then
    wait -n || failed=1
    running=$((running - 1))
  fi
done
while [ "$running" -gt 0 ]; do
  wait -n || failed=1
  running=$((running - 1))
done
exit "$failed"
