#!/usr/bin/env bash
# Builds the Debian package, installs it with apt, runs both installed programs (the GUI under Xvfb,
# with a screenshot that must not be blank), removes the package and checks nothing is left behind.
# Needs root (apt-get). Leaves the package uninstalled, also when a step fails.
#
#   packaging/test-deb.sh [BUILD_DIR]        (default: build-pkg in the repository)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
build_dir="${1:-$repo/build-pkg}"
out_dir="$build_dir/deb-test"
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
export DEBIAN_FRONTEND=noninteractive

step() { printf '\n== %s\n' "$*"; }
fail() { echo "test-deb.sh: FAILED: $*" >&2; exit 1; }

installed() { dpkg-query -W -f='${Status}' scalescope 2>/dev/null | grep -q 'install ok installed'; }
cleanup() {
  if installed; then
    echo "test-deb.sh: removing the package left installed by a failed step"
    $SUDO apt-get remove -y -q scalescope >/dev/null || true
  fi
}
trap cleanup EXIT

if installed; then
  step "removing a scalescope package installed before this test"
  $SUDO apt-get remove -y -q scalescope
fi

step "configure and build (Release, prefix /usr)"
# The prefix is the one the package installs to: the GUI has the demo folder's path compiled in.
cmake -S "$repo" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
  -DSCALESCOPE_BUILD_TESTS=OFF >/dev/null
cmake --build "$build_dir" --target scalescope scalescope-cli -j 2

step "cpack"
rm -f "$build_dir"/scalescope_*.deb
(cd "$build_dir" && cpack -G DEB >/dev/null)
deb=$(ls "$build_dir"/scalescope_*.deb)
echo "$deb ($(du -h "$deb" | cut -f1))"
dpkg-deb --field "$deb" Package Version Architecture Depends Recommends
dpkg-deb --contents "$deb" | awk '{print $6}' | grep -v '/$' | sed 's/^\.//' | grep -v '^/usr/share/scalescope/demo/' || true
echo "demo files: $(dpkg-deb --contents "$deb" | grep -c '/usr/share/scalescope/demo/.*[^/]$' || true)"

step "apt-get install"
(cd "$build_dir" && $SUDO apt-get install -y -q "./$(basename "$deb")" 2>&1 | tail -n 3)
installed || fail "the package is not installed after apt-get install"
mapfile -t package_files < <(dpkg -L scalescope | while read -r path; do [ -f "$path" ] && echo "$path"; done)
echo "${#package_files[@]} files installed"

step "scalescope-cli --version"
version_output=$(scalescope-cli --version)
echo "$version_output"
project_version=$(dpkg-deb --field "$deb" Version)
grep -q "$project_version" <<<"$version_output" || fail "--version does not print $project_version"

demo_qa=/usr/share/scalescope/demo/qa-float
if [ -f "$demo_qa/config.json" ]; then
  step "scalescope-cli inspect on the installed demo checkpoint"
  scalescope-cli inspect "$demo_qa" --json >"$build_dir/inspect.json"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("architecture:", d.get("architecture"), "| tensors:", len(d.get("tensors", [])))' "$build_dir/inspect.json"
fi

step "GUI under Xvfb"
rm -rf "$out_dir" && mkdir -p "$out_dir"
# A throwaway HOME keeps the GUI's settings file out of the real one.
HOME="$out_dir/home" xvfb-run -a -s "-screen 0 1280x800x24" bash -c '
  scalescope >"$0/gui.log" 2>&1 &
  gui=$!
  sleep 8
  import -window root "$0/screenshot.png"
  if kill -0 "$gui" 2>/dev/null; then kill "$gui"; wait "$gui" 2>/dev/null || true; else echo "GUI exited early" >"$0/gui-exited"; fi
' "$out_dir"
[ -f "$out_dir/gui-exited" ] && { cat "$out_dir/gui.log"; fail "the GUI exited before the screenshot"; }
colours=$(identify -format '%k' "$out_dir/screenshot.png")
deviation=$(convert "$out_dir/screenshot.png" -format '%[fx:standard_deviation]' info:)
echo "screenshot $out_dir/screenshot.png: $colours colours, standard deviation $deviation"
[ "$colours" -gt 16 ] || fail "the screenshot is blank ($colours colours): no window was drawn"

step "apt-get remove"
$SUDO apt-get remove -y -q scalescope 2>&1 | tail -n 2
installed && fail "the package is still installed"
left=0
for path in "${package_files[@]}"; do
  if [ -e "$path" ]; then echo "left behind: $path"; left=1; fi
done
[ -e /usr/share/scalescope ] && { echo "left behind: /usr/share/scalescope"; left=1; }
[ "$left" -eq 0 ] || fail "files remain after apt-get remove"
echo "all ${#package_files[@]} installed files are gone"

echo
echo "test-deb.sh: PASSED"
