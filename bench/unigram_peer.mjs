// The npm peer of scalescope-bench-unigram: Hugging Face's tokenizers (installed outside the
// project; resolution starts at the current folder) loading the same tokenizer.json and encoding the
// same text. Prints JSON: load and encode times (ms), the resident memory the tokenizer added and
// the extra peak while encoding (MB, from VmRSS/VmHWM like the C++ side), and the encoding.
//   cd /work/devtools && node bench/unigram_peer.mjs TEXT_FILE TOKENIZER_JSON [REPEATS]
import { createRequire } from 'module'
import fs from 'fs'
import path from 'path'

const require = createRequire(path.join(process.cwd(), 'noop.js'))
const { Tokenizer } = require('tokenizers')

const status = (key) => {
  const line = fs.readFileSync('/proc/self/status', 'utf8').split('\n').find((l) => l.startsWith(key))
  return parseFloat(line.slice(key.length)) / 1024
}
const resetPeak = () => fs.writeFileSync('/proc/self/clear_refs', '5')

const [textPath, tokenizerPath, repeatsArg] = process.argv.slice(2)
const repeats = Math.max(1, parseInt(repeatsArg || '5', 10))
const text = fs.readFileSync(textPath, 'utf8')

const baseMb = status('VmRSS:')
let start = process.hrtime.bigint()
const tokenizer = Tokenizer.fromFile(tokenizerPath)
const loadMs = Number(process.hrtime.bigint() - start) / 1e6
const loadedMb = status('VmRSS:')
resetPeak()
const encodeMs = []
let encoding
for (let r = 0; r < repeats; ++r) {
  start = process.hrtime.bigint()
  encoding = await tokenizer.encode(text)
  encodeMs.push(Number(process.hrtime.bigint() - start) / 1e6)
}
const peakMb = status('VmHWM:')
const sorted = [...encodeMs].sort((a, b) => a - b)
process.stdout.write(
  JSON.stringify({
    tokenizers: require('tokenizers/package.json').version,
    node: process.version,
    load_ms: loadMs,
    encode_ms_median: sorted[Math.floor(sorted.length / 2)],
    encode_ms: encodeMs,
    tokenizer_mb: loadedMb - baseMb,
    encode_peak_extra_mb: peakMb - loadedMb,
    encoding: { ids: encoding.getIds(), offsets: encoding.getOffsets() },
  }) + '\n',
)
