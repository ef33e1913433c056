#!/usr/bin/env bash
# Writes the JSON of inspect, qa, fill-mask, compare and tokenize on the demo checkpoints into a
# folder, one file per command, so that two builds can be compared byte for byte (refactors that
# must not change behaviour: run it before and after, then `diff -r`).
# Usage: scripts/cli_snapshot.sh OUT_DIR [CLI]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/cli_snapshot.sh OUT_DIR [CLI]}
cli=${2:-build/app/scalescope-cli}
demo=resources/demo
mkdir -p "$out"
# elapsed times differ between runs; everything else must not.
strip_timing() { python3 -c 'import json,sys
def walk(v):
    if isinstance(v, dict):
        return {k: walk(x) for k, x in v.items() if k not in ("elapsed_ms", "load_ms", "run_ms", "reference_ms", "seconds", "questions_per_second")}
    if isinstance(v, list):
        return [walk(x) for x in v]
    return v
print(json.dumps(walk(json.load(sys.stdin)), indent=1, sort_keys=True))'; }
run() { local name=$1; shift; "$cli" "$@" --json 2>"$out/$name.stderr" | strip_timing >"$out/$name.json" || echo "exit $?" >>"$out/$name.stderr"; }

context=$(python3 -c 'import json; d=json.load(open("'$demo'/corpus/questions.json"))["data"][0]["paragraphs"][0]; print(d["context"])')
question=$(python3 -c 'import json; d=json.load(open("'$demo'/corpus/questions.json"))["data"][0]["paragraphs"][0]; print(d["qas"][0]["question"])')
mask_text=$(python3 -c 'import json; print(json.load(open("'$demo'/corpus/mask_sentences.json"))[0]["text"])')

for ckpt in qa-float qa-fp8 qa-fp8-static mlm-float mlm-fp8; do
  run "inspect-$ckpt" inspect "$demo/$ckpt"
done
run tokenize tokenize "$demo/qa-fp8" --text "$question" --pair "$context"
for mode in fp8 dequant reference; do
  run "qa-fp8-$mode" qa "$demo/qa-fp8" --question "$question" --context "$context" --mode "$mode" --reference "$demo/qa-float" --top-k 3
  run "qa-static-$mode" qa "$demo/qa-fp8-static" --question "$question" --context "$context" --mode "$mode" --top-k 3
  run "fill-mask-$mode" fill-mask "$demo/mlm-fp8" --text "$mask_text" --mode "$mode" --reference "$demo/mlm-float"
done
run compare-qa compare "$demo/qa-fp8" --reference "$demo/qa-float" --question "$question" --context "$context"
run compare-qa-static compare "$demo/qa-fp8-static" --question "$question" --context "$context"
run compare-mlm compare "$demo/mlm-fp8" --reference "$demo/mlm-float" --text "$mask_text"
run compare-ids compare "$demo/qa-fp8" --input-ids 0,100,200,300,2
echo "wrote $(ls "$out" | grep -c json) JSON files to $out"
