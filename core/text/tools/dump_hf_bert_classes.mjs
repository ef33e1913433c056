// Records, for every Unicode scalar value, what Hugging Face's BERT normalizer and pre-tokenizer do
// with it, so that generate_unicode_tables.py --wordpiece can correct Python's Unicode tables where
// Hugging Face's differ (its Mn/P*/Cf tables come from an older Unicode than Python's, its case
// mapping and NFD from a newer one).
//
// Usage (tokenizers is installed outside the project; resolution starts at the current folder):
//   mkdir -p /tmp/hf && cd /tmp/hf && npm install tokenizers@0.23.2
//   node /path/to/core/text/tools/dump_hf_bert_classes.mjs > /tmp/hf/bert_classes.json
// Output: one JSON array of [code point, clean, cjk, strip, lower, split] where clean is "R"
// (removed), "S" (becomes a space) or "K" (kept); cjk is 1 when the character gets spaces around
// it; strip and lower are the code points the character becomes (null when unchanged); split is
// "W" (whitespace), "P" (punctuation, isolated) or "O".
import { createRequire } from 'module'
import path from 'path'

const require = createRequire(path.join(process.cwd(), 'noop.js'))
const { bertNormalizer, bertPreTokenizer } = require('tokenizers')

const only = (options) =>
  bertNormalizer({ cleanText: false, handleChineseChars: false, stripAccents: false, lowercase: false, ...options })
const clean = only({ cleanText: true })
const cjk = only({ handleChineseChars: true })
const strip = only({ stripAccents: true })
const lower = only({ lowercase: true })
const split = bertPreTokenizer()
const codePoints = (s) => Array.from(s).map((c) => c.codePointAt(0))

const rows = []
for (let cp = 0; cp < 0x110000; ++cp) {
  if (cp >= 0xd800 && cp <= 0xdfff) continue // not representable in a Rust string
  const c = String.fromCodePoint(cp)
  const cleaned = clean.normalizeString(c)
  const stripped = strip.normalizeString(c)
  const lowered = lower.normalizeString(c)
  // Letters around the character show whether the pre-tokenizer drops it or isolates it.
  const pieces = split.preTokenizeString('a' + c + 'b').length
  rows.push([
    cp,
    cleaned === '' ? 'R' : cleaned === c && cp !== 0x20 ? 'K' : cleaned === ' ' ? 'S' : 'X',
    cjk.normalizeString(c) === c ? 0 : 1,
    stripped === c ? null : codePoints(stripped),
    lowered === c ? null : codePoints(lowered),
    pieces === 2 ? 'W' : pieces === 3 ? 'P' : 'O',
  ])
}
process.stdout.write(JSON.stringify(rows))
