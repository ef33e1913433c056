#!/usr/bin/env bash
# Rebuilds the demo checkpoints in resources/demo from the project's own corpus: trains the float
# models (resources/demo/tools/train_demo.py, PyTorch on CPU), checks that the C++ tokenizer agrees with the
# trainer's, makes the FP8 variants with the project's CLI, and measures expectations.json with
# the same CLI so that tests/test_demo.cpp can hold the checkpoints to those numbers.
#
# Usage: resources/demo/tools/make_demo.sh [--roberta | --bert | --defect | --tasks | --tasks-fp8 | --xlmr] [path/to/scalescope-cli]
#   (default: both QA families; build/app/scalescope-cli)
#   --roberta  only the RoBERTa demos (qa-float, qa-fp8, qa-fp8-static, mlm-float, mlm-fp8)
#   --bert     only the BERT pair (bert-qa-float, bert-qa-fp8); the RoBERTa files are not touched
#   --defect   only qa-fp8-defect: qa-fp8-static with one static input scale 64x too small (the
#              planted defect the Demo menu offers to find), nothing trained or re-quantized;
#              the CLI then measures it into expectations.json. Needs no PyTorch.
#   --tasks    the task demos of issue 49 (resources/demo/tools/train_tasks.py): writes tasks/ (texts,
#              STS, BEIR folder, classification, rerank example), trains embed-float, rerank-float and
#              classify-float, and measures them with an independent forward (tasks/metrics.json).
#              Needs PyTorch, not the CLI (about an hour on one core of a busy two-core machine).
#   --tasks-fp8  the FP8 copies of the task demos, made with the CLI from the float folders as they
#              are: embed-fp8, rerank-fp8, classify-fp8 (weights per channel, dynamic per-token
#              activations), rerank-fp8-static (weights and static activations per tensor, calibrated
#              on corpus/calibration.txt) and rerank-fp8-defect (rerank-fp8-static with one static
#              input scale 64x too small, chosen by train_tasks.py choose-defect so that the ranking
#              of tasks/rerank_query.txt changes). Needs a CLI that loads these architectures.
#   --xlmr     the multilingual XLM-RoBERTa reranker of issue 50 (resources/demo/tools/train_xlmr.py):
#              a Unigram SentencePiece tokenizer trained on corpus/multilingual, the rerank example and
#              tasks/retrieval-xlmr, xlmr-rerank-float trained from random weights, then (CLI)
#              xlmr-rerank-fp8 (weights per channel, dynamic per-token activations), the tokenizer
#              check against Python's sentencepiece, and the measured numbers in expectations.json.
#              Needs python3-sentencepiece besides PyTorch.
# Needs: Debian's python3-torch (apt-get install python3-torch). Each family takes under an hour on
# one core (BERT: 52 minutes on a busy two-core machine).
set -euo pipefail

families=(roberta bert)
case "${1:-}" in
    --roberta) families=(roberta); shift ;;
    --bert) families=(bert); shift ;;
    --defect) families=(defect); shift ;;
    --tasks) families=(tasks); shift ;;
    --tasks-fp8) families=(tasks-fp8); shift ;;
    --xlmr) families=(xlmr); shift ;;
    -*) echo "make_demo.sh: unknown option $1; expected --roberta, --bert, --defect, --tasks, --tasks-fp8 or --xlmr." >&2; exit 2 ;;
esac

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cli="${1:-$repo/build/app/scalescope-cli}"
python="${PYTHON:-/usr/bin/python3}"
demo="$repo/resources/demo"
trainer="$repo/resources/demo/tools/train_demo.py"

if [[ ${families[*]} != tasks ]] && [[ ! -x "$cli" ]]; then
    echo "make_demo.sh: $cli is not an executable scalescope-cli; build it first or pass its path." >&2
    exit 1
fi
if [[ ${families[*]} != defect && ${families[*]} != tasks-fp8 ]] && ! "$python" -c "import torch" 2>/dev/null; then
    echo "make_demo.sh: $python cannot import torch; install Debian's python3-torch." >&2
    exit 1
fi

# The planted defect of qa-fp8-defect: the static input scale of layer 2's attention output Linear,
# calibrated 64 times too small, so that most of that Linear's inputs clip at 448 x scale.
defect_tensor=roberta.encoder.layer.2.attention.output.dense.input_scale
defect_factor=0.015625 # 1/64
# The planted defect of rerank-fp8-defect (train_tasks.py choose-defect, an emulation of the static
# copy): with this Linear's static input scale 64 times too small the reranker puts another passage
# first for tasks/rerank_query.txt (the clean static copy keeps the float model's first passage).
rerank_defect_tensor=roberta.encoder.layer.1.attention.output.dense.input_scale
tasks_trainer="$repo/resources/demo/tools/train_tasks.py"

xlmr_trainer="$repo/resources/demo/tools/train_xlmr.py"

for family in "${families[@]}"; do
    if [[ $family == xlmr ]]; then
        "$python" "$xlmr_trainer" tokenizer
        "$python" "$xlmr_trainer" datasets
        "$python" "$xlmr_trainer" train
        "$python" "$xlmr_trainer" verify-tokenizer "$cli"
        "$python" "$xlmr_trainer" verify
        "$cli" quantize "$demo/xlmr-rerank-float" "$demo/xlmr-rerank-fp8" --weights channel --activations token --force
        "$python" "$xlmr_trainer" measure "$cli"
        continue
    elif [[ $family == tasks ]]; then
        "$python" "$tasks_trainer" datasets
        "$python" "$tasks_trainer" train
        "$python" "$tasks_trainer" verify
        "$python" "$tasks_trainer" choose-defect
        continue
    elif [[ $family == tasks-fp8 ]]; then
        "$cli" quantize "$demo/embed-float" "$demo/embed-fp8" --weights channel --activations token --force
        "$cli" quantize "$demo/rerank-float" "$demo/rerank-fp8" --weights channel --activations token --force
        "$cli" quantize "$demo/classify-float" "$demo/classify-fp8" --weights channel --activations token --force
        "$cli" quantize "$demo/rerank-float" "$demo/rerank-fp8-static" --weights tensor --activations tensor \
            --calibration "$demo/corpus/calibration.txt" --force
        "$python" "$repo/resources/demo/tools/plant_defect.py" "$demo/rerank-fp8-static" "$demo/rerank-fp8-defect" \
            "$rerank_defect_tensor" "$defect_factor"
        # The planted defect must change the demo ranking's first passage as the emulation in
        # choose-defect said (the clean static copy already swaps some of the lower places).
        query="$(cat "$demo/tasks/rerank_query.txt")"
        "$cli" rerank "$demo/rerank-fp8-defect" --reference "$demo/rerank-float" --query "$query" \
            --passages "$demo/tasks/rerank_passages.txt" --json > "$demo/tasks/.rerank-defect.json"
        if "$python" -c "import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if r['ranking'][0]['index'] == r['reference_ranking'][0]['index'] else 1)" \
                "$demo/tasks/.rerank-defect.json"; then
            echo "make_demo.sh: rerank-fp8-defect puts the same passage first as rerank-float; choose another Linear." >&2
            exit 1
        fi
        rm -f "$demo/tasks/.rerank-defect.json"
        continue
    elif [[ $family == defect ]]; then
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
if (( size_kib > 40 * 1024 )); then
    echo "make_demo.sh: resources/demo is larger than 40 MB; shrink the models." >&2
    exit 1
fi
