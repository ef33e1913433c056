#!/usr/bin/env bash
# Rebuilds the demo checkpoints in resources/demo from the project's own corpus: trains the float
# models (resources/demo/tools/train_demo.py, PyTorch on CPU), checks that the C++ tokenizer agrees with the
# trainer's, makes the FP8 variants with the project's CLI, and measures expectations.json with
# the same CLI so that tests/test_demo.cpp can hold the checkpoints to those numbers.
#
# Usage: resources/demo/tools/make_demo.sh [--roberta | --bert | --defect] [path/to/scalescope-cli]
#   (default: both families; build/app/scalescope-cli)
#   --roberta  only the RoBERTa demos (qa-float, qa-fp8, qa-fp8-static, mlm-float, mlm-fp8)
#   --bert     only the BERT pair (bert-qa-float, bert-qa-fp8); the RoBERTa files are not touched
#   --defect   only qa-fp8-defect: qa-fp8-static with one static input scale 64x too small (the
#              planted defect the Demo menu offers to find), nothing trained or re-quantized;
#              the CLI then measures it into expectations.json. Needs no PyTorch.
# Needs: Debian's python3-torch (apt-get install python3-torch). Each family takes under an hour on
# one core (BERT: 52 minutes on a busy two-core machine).
set -euo pipefail

families=(roberta bert)
case "${1:-}" in
    --roberta) families=(roberta); shift ;;
    --bert) families=(bert); shift ;;
    --defect) families=(defect); shift ;;
    -*) echo "make_demo.sh: unknown option $1; expected --roberta, --bert or --defect." >&2; exit 2 ;;
esac

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cli="${1:-$repo/build/app/scalescope-cli}"
python="${PYTHON:-/usr/bin/python3}"
demo="$repo/resources/demo"
trainer="$repo/resources/demo/tools/train_demo.py"

if [[ ! -x "$cli" ]]; then
    echo "make_demo.sh: $cli is not an executable scalescope-cli; build it first or pass its path." >&2
    exit 1
fi
if [[ ${families[*]} != defect ]] && ! "$python" -c "import torch" 2>/dev/null; then
    echo "make_demo.sh: $python cannot import torch; install Debian's python3-torch." >&2
    exit 1
fi

# The planted defect of qa-fp8-defect: the static input scale of layer 2's attention output Linear,
# calibrated 64 times too small, so that most of that Linear's inputs clip at 448 x scale.
defect_tensor=roberta.encoder.layer.2.attention.output.dense.input_scale
defect_factor=0.015625 # 1/64

for family in "${families[@]}"; do
    if [[ $family == defect ]]; then
        "$python" "$repo/resources/demo/tools/plant_defect.py" "$demo/qa-fp8-static" "$demo/qa-fp8-defect" \
            "$defect_tensor" "$defect_factor"
    elif [[ $family == roberta ]]; then
        "$python" "$trainer" train
        "$python" "$trainer" verify-tokenizer "$cli" --family roberta
        "$cli" quantize "$demo/qa-float" "$demo/qa-fp8" --weights channel --activations token --force
        "$cli" quantize "$demo/qa-float" "$demo/qa-fp8-static" --weights tensor --activations tensor \
            --calibration "$demo/corpus/passages.txt" --force
        "$cli" quantize "$demo/mlm-float" "$demo/mlm-fp8" --weights channel --activations token --force
        # qa-fp8-static changed: the defect is planted in it anew.
        "$python" "$repo/resources/demo/tools/plant_defect.py" "$demo/qa-fp8-static" "$demo/qa-fp8-defect" \
            "$defect_tensor" "$defect_factor"
    else
        "$python" "$trainer" train-bert
        "$python" "$trainer" verify-tokenizer "$cli" --family bert
        "$cli" quantize "$demo/bert-qa-float" "$demo/bert-qa-fp8" --weights channel --activations token --force
    fi
    # Records this family's numbers; the other family's entries in expectations.json stay.
    "$python" "$trainer" measure "$cli" --family "$family"
done

size_kib=$(du -sk "$demo" | cut -f1)
echo "resources/demo: ${size_kib} KiB"
if (( size_kib > 25 * 1024 )); then
    echo "make_demo.sh: resources/demo is larger than 25 MB; shrink the models." >&2
    exit 1
fi
