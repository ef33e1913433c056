#!/usr/bin/env bash
# Regenerates the Unigram tokenizer test data in this folder: trains the SentencePiece model on
# corpus.txt, converts it to the two tokenizer.json layouts, writes the test strings, records Hugging
# Face's ids and offsets for them (npm tokenizers) and where Python's sentencepiece differs.
# Development tools, never dependencies of the project:
#   apt-get install -y python3-sentencepiece
#   mkdir -p /work/devtools && cd /work/devtools && npm install tokenizers@0.23.2
# Usage: tests/data/unigram/regenerate.sh [--keep-model] [NPM_FOLDER]   (default /work/devtools)
#   --keep-model reuses sentencepiece.bpe.model. Training again with sentencepiece 0.1.97 gives the
#   same pieces and scores; the file differs only in the paths the trainer records in it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
keep=0
if [[ "${1:-}" == "--keep-model" ]]; then keep=1; shift; fi
npm_folder="${1:-/work/devtools}"
python=/usr/bin/python3   # Debian's python3-sentencepiece lives here
cd "$here"
if [[ $keep == 0 ]]; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  # nmt_nfkc (the default) so that precompiled_charsmap holds real rules; hard_vocab_limit off lets
  # the trainer stop below 1500 pieces on a corpus this small; one thread keeps it deterministic.
  "$python" -c "import sentencepiece as s; s.SentencePieceTrainer.train(input='corpus.txt', \
model_prefix='$work/m', model_type='unigram', vocab_size=1500, hard_vocab_limit=False, \
num_threads=1, minloglevel=2)"
  cp "$work/m.model" sentencepiece.bpe.model
fi
"$python" convert_spm.py sentencepiece.bpe.model tokenizer.json tokenizer_legacy.json
"$python" make_variant.py tokenizer.json tokenizer_variant.json
"$python" make_strings.py strings.json
(cd "$npm_folder" && node "$here/golden.mjs" "$here/strings.json" "$here/golden.json" \
  "current=$here/tokenizer.json" "legacy=$here/tokenizer_legacy.json" "variant=$here/tokenizer_variant.json")
"$python" compare_sentencepiece.py sentencepiece.bpe.model strings.json golden.json sentencepiece_differences.json
