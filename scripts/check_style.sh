#!/usr/bin/env bash
# Checks the style of a change: clang-format (.clang-format) on the lines the change touches, and
# clang-tidy (.clang-tidy) on the C++ files it touches, against the build's compile_commands.json.
#
#   scripts/check_style.sh [BASE]     (default BASE: the merge base with main; working tree included)
#   scripts/check_style.sh --all      clang-tidy on every core/, charts/, ui/ and app/ source file
#
# Only touched lines are held to the format: older code is reformatted when it is next edited, so a
# reader of the history sees behaviour changes, not whitespace. Exit status: 1 when either finds
# something, 0 otherwise. Needs clang-format-14 and clang-tidy-14 (packaging/install-deps.sh --dev).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${BUILD_DIR:-build}"
status=0

if [ "${1:-}" = "--all" ]; then
  mapfile -t sources < <(git ls-files 'core/*.cpp' 'charts/*.cpp' 'ui/*.cpp' 'app/*.cpp')
else
  base="${1:-$(git merge-base HEAD main)}"
  mapfile -t sources < <(git diff --name-only --diff-filter=d "$base" -- 'core/*.cpp' 'charts/*.cpp' 'ui/*.cpp' 'app/*.cpp' 'tests/*.cpp' 'bench/*.cpp')
  mapfile -t touched < <(git diff --name-only --diff-filter=d "$base" -- '*.cpp' '*.h')
  if [ ${#touched[@]} -gt 0 ]; then
    format_diff="$(git clang-format-14 --diff "$base" -- "${touched[@]}" 2>&1 || true)"
    case "$format_diff" in
      ""|*"no modified files to format"*|*"did not modify any files"*) ;;
      *) echo "clang-format: these touched lines differ from .clang-format:"; echo "$format_diff"; status=1 ;;
    esac
  fi
fi

if [ ${#sources[@]} -gt 0 ]; then
  if [ ! -f "$build_dir/compile_commands.json" ]; then
    echo "check_style: $build_dir/compile_commands.json is missing; run scripts/build.sh first." >&2
    exit 2
  fi
  tidy_output="$(clang-tidy-14 -p "$build_dir" --quiet "${sources[@]}" 2>/dev/null || true)"
  if grep -q "warning:\|error:" <<<"$tidy_output"; then
    echo "clang-tidy:"; echo "$tidy_output"; status=1
  fi
fi
exit $status
