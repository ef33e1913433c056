// Encodes every text and pair of strings.json with Hugging Face's tokenizers (the npm package, a
// development check that is never a dependency) for each tokenizer.json layout, and writes the ids
// and offsets that test_unigram_tokenizer must reproduce.
//
// Usage (tokenizers is installed outside the project; resolution starts at the current folder):
//   mkdir -p /work/devtools && cd /work/devtools && npm install tokenizers@0.23.2
//   node /path/to/golden.mjs STRINGS_JSON OUT_JSON name=tokenizer.json...
import { createRequire } from 'module'
import fs from 'fs'
import path from 'path'

const require = createRequire(path.join(process.cwd(), 'noop.js'))
const { Tokenizer } = require('tokenizers')
const tokenizersVersion = require('tokenizers/package.json').version

const [stringsPath, outPath, ...layouts] = process.argv.slice(2)
const strings = JSON.parse(fs.readFileSync(stringsPath, 'utf8'))

const record = (encoding) => ({ ids: encoding.getIds(), offsets: encoding.getOffsets() })

const out = { tokenizers: tokenizersVersion, layouts: {} }
for (const layout of layouts) {
  const [name, file] = layout.split('=')
  const tokenizer = Tokenizer.fromFile(file)
  const single = []
  for (const text of strings.single) single.push(record(await tokenizer.encode(text)))
  const pairs = []
  for (const [a, b] of strings.pairs) pairs.push(record(await tokenizer.encode(a, b)))
  out.layouts[name] = { single, pairs }
}
fs.writeFileSync(outPath, JSON.stringify(out) + '\n')
