#!/usr/bin/env bash
# Rebuilds the demo checkpoints in resources/demo from the project's own corpus: trains the float
# models (resources/demo/tools/train_demo.py, PyTorch on CPU), checks that the C++ tokenizer agrees with the
# trainer's, makes the FP8 variants with the project's CLI, and measures expectations.json with
# the same CLI so that tests/test_demo.cpp can hold the checkpoints to those numbers.
#
# Usage: resources/demo/tools/make_demo.sh [path/to/scalescope-cli]   (default: build/app/scalescope-cli)
# Needs: Debian's python3-torch (apt-get install python3-torch). Takes well under an hour on one core.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cli="${1:-$repo/build/app/scalescope-cli}"
python="${PYTHON:-/usr/bin/python3}"
demo="$repo/resources/demo"

if [[ ! -x "$cli" ]]; then
    echo "make_demo.sh: $cli is not an executable scalescope-cli; build it first or pass its path." >&2
    exit 1
fi
if ! "$python" -c "import torch" 2>/dev/null; then
    echo "make_demo.sh: $python cannot import torch; install Debian's python3-torch." >&2
    exit 1
fi

"$python" "$repo/resources/demo/tools/train_demo.py" train
"$python" "$repo/resources/demo/tools/train_demo.py" verify-tokenizer "$cli"

"$cli" quantize "$demo/qa-float" "$demo/qa-fp8" --weights channel --activations token --force
"$cli" quantize "$demo/qa-float" "$demo/qa-fp8-static" --weights tensor --activations tensor \
    --calibration "$demo/corpus/passages.txt" --force
"$cli" quantize "$demo/mlm-float" "$demo/mlm-fp8" --weights channel --activations token --force

"$python" "$repo/resources/demo/tools/train_demo.py" measure "$cli"

size_kib=$(du -sk "$demo" | cut -f1)
echo "resources/demo: ${size_kib} KiB"
if (( size_kib > 25 * 1024 )); then
    echo "make_demo.sh: resources/demo is larger than 25 MB; shrink the models." >&2
    exit 1
fi
