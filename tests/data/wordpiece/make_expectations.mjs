// Writes the WordPiece expectations that tests/test_wordpiece.cpp compares against: ids, offsets,
// type ids and decoded text from Hugging Face's own tokenizers library (the Rust implementation
// behind BertTokenizerFast), for a varied set of strings and pairs, with the real bert-base-uncased
// and bert-base-cased vocabularies of ../shared/data, plus a tiny tokenizer.json written by the
// library itself.
//
// Usage (tokenizers stays outside the project; it is resolved from the current folder):
//   mkdir -p /tmp/hf && cd /tmp/hf && npm install tokenizers@0.23.2
//   node /path/to/tests/data/wordpiece/make_expectations.mjs /path/to/shared/data
// Writes expectations.json, tiny-tokenizer/tokenizer.json and tiny-tokenizer/expectations.json
// next to this script.
//
// The tokenizer is assembled the way transformers converts a BERT vocab.txt to BertTokenizerFast
// (BertConverter): WordPiece model with [UNK], BertNormalizer(clean_text, handle_chinese_chars =
// tokenize_chinese_chars, strip_accents, lowercase = do_lower_case), BertPreTokenizer, the five
// special tokens as added tokens, "[CLS] $A [SEP]" / "[CLS] $A [SEP] $B:1 [SEP]:1", WordPiece decoder.
import { createRequire } from 'module'
import fs from 'fs'
import path from 'path'
import { fileURLToPath } from 'url'

const require = createRequire(path.join(process.cwd(), 'noop.js'))
const tk = require('tokenizers')
const here = path.dirname(fileURLToPath(import.meta.url))
const shared = process.argv[2]
if (!shared) {
  console.error('usage: node make_expectations.mjs SHARED_DATA_DIR')
  process.exit(2)
}

const SPECIALS = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']

function readVocab(file) {
  const vocab = {}
  fs.readFileSync(file, 'utf8')
    .split('\n')
    .forEach((line, index, lines) => {
      if (index === lines.length - 1 && line === '') return
      vocab[line.replace(/\r$/, '')] = index
    })
  return vocab
}

function bertTokenizer(vocab, { lowercase, stripAccents, chinese, maxInputCharsPerWord }) {
  const model = tk.WordPiece.init(vocab, { unkToken: '[UNK]', continuingSubwordPrefix: '##', maxInputCharsPerWord })
  const tokenizer = new tk.Tokenizer(model)
  tokenizer.setNormalizer(
    tk.bertNormalizer({ cleanText: true, handleChineseChars: chinese, stripAccents, lowercase }),
  )
  tokenizer.setPreTokenizer(tk.bertPreTokenizer())
  tokenizer.addSpecialTokens(SPECIALS)
  tokenizer.setPostProcessor(
    tk.templateProcessing('[CLS]:0 $A:0 [SEP]:0', '[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1', [
      ['[CLS]', vocab['[CLS]']],
      ['[SEP]', vocab['[SEP]']],
    ]),
  )
  tokenizer.setDecoder(tk.wordPieceDecoder('##', true))
  return tokenizer
}

const long = (unit, count) => unit.repeat(count)
const TEXTS = [
  // the README's known truth and plain English
  'Hello world!',
  'The quick brown fox jumps over the lazy dog.',
  "Don't stop; it's 5 o'clock, isn't it? I'm sure we've seen they're late.",
  'Super Bowl 50 was an American football game to determine the champion of the National Football League (NFL) for the 2015 season.',
  // accents, other scripts, case
  'Héllo wörld, naïve café résumé',
  'Ångström façade über Straße ẞ',
  'Tiếng Việt có dấu: Hà Nội',
  'ΑΘΗΝΑ Σίσυφος ὅς ΣΑΣ ς',
  'Привет, мир! Ёлка Й',
  'İstanbul ıs IJssel',
  'مرحبا بالعالم',
  'שָׁלוֹם עולם',
  'नमस्ते दुनिया',
  'สวัสดีครับ',
  '안녕하세요 세계',
  'e\u0301 cafe\u0301 A\u030A',
  'a\u0316\u0301 o\u0323\u0302',
  'i\u0307 I\u0307',
  'ﬁnance ﬂow Ǆ ǅ ǆ Ⅻ ⅻ',
  'ＡＢＣ１２３！ｶﾀｶﾅ',
  // CJK
  '日本語のテキストです。',
  '我爱北京天安门！',
  'BERT是一个模型, GPT也是.',
  '𠀀𪜀 x\u{2B820}y\u{2B920}z \u{2CEAF}\u{2CEB0}',
  '豈 更 \u{2F800} \u{2FA1D}',
  // punctuation runs
  'Wait...what?!?',
  '--==**##@@',
  '(a)[b]{c}<d>',
  '“quoted” ‘single’ «guillemets» „low“',
  'a—b–c−d',
  '100%$#@^&*~`|\\/',
  '¿Qué? ¡Sí!',
  'e.g. U.S.A. i.e.',
  '§1 ¶2 † ‡ • ‣ ※ ⁂',
  // control characters and odd whitespace
  'a\u0000b\u0001c\u007Fd\u0085e\u000Bf\u000Cg',
  'tab\tnew\nline\r\ncr\rend',
  'soft\u00ADhyphen zero\u200Bwidth joiner\u200Dx \uFEFFbom',
  'private\uE000use \u{F0000}plane',
  '\uFFFDreplacement',
  'a\u00A0b\u2003c\u3000d\u2028e\u2029f\u1680g\u202Fh',
  '\t\n\r',
  '',
  ' ',
  '   multiple     spaces   ',
  '\u001C\u001D\u001E\u001Fseparators',
  // long words
  long('a', 100),
  long('a', 101),
  'supercalifragilisticexpialidocious antidisestablishmentarianism',
  long('x', 300) + ' short',
  long('é', 101),
  long('a\u0301', 60),
  long('ab', 49) + ' ' + long('ab', 51),
  long('日', 150),
  // emoji
  'I ❤️ NY 😀👍🏽 👨‍👩‍👧',
  '🥰 new emoji 🫠',
  '🇫🇷 flag',
  // numbers
  '3.14159 1,000,000 2024-12-01 +33 (0)1 23 45 67 89 0x1F 1e-5',
  '٣٤٥ ١٢ ½ ¾ ² ³',
  '12th 1st 2nd 3rd 4th',
  // mask and other special tokens written in the text
  'The capital of France is [MASK].',
  '[MASK][MASK]',
  'x[MASK]y',
  '[mask] lower',
  '[ MASK ]',
  '[MASK',
  '[CLS] already [SEP] here [PAD] [UNK]',
  '  [MASK]  spaced  ',
  'Paris is the [MASK] of [MASK].',
  // Unicode version corners (tables of different ages inside Hugging Face)
  'a\u061Db \u2E43 x\u0898y \u1734z \u{11938} \u166D',
  'x\u0890y \u{110CD} \u1C89 \u{10D50}',
  '\u{1D16D}\u{1D165}x a\u{1D16D}\u{1D165}\u0301',
  '\u1100\u1161\u11A8 한국어',
  // code-like text
  'https://example.com/path?q=1&r=2#frag',
  'user@example.com',
  'C++ and C# and F#',
  'snake_case camelCase kebab-case',
  'return x->y == z ? a : b;',
]

const PAIRS = [
  ['Who wrote Hamlet?', 'Shakespeare wrote Hamlet around 1600.'],
  ['Hello world!', 'Hello world!'],
  ['', 'empty first'],
  ['empty second', ''],
  ['[MASK] here', 'and [SEP] there'],
  ['Où est la café?', 'Près de la Gare du Nord.'],
  ['日本の首都は？', '東京です。'],
  ['Was ist das?', 'Das ist ein 🥰 Beispiel\u0000 mit Steuerzeichen\u0085.'],
  ['How many?', '1,234,567 people (approx.)'],
  [long('q', 120), 'short answer'],
]

function record(tokenizer, encoding, text, pair) {
  const entry = { text }
  if (pair !== undefined) entry.pair = pair
  entry.ids = encoding.getIds()
  entry.offsets = encoding.getOffsets()
  entry.type_ids = encoding.getTypeIds()
  return entry
}

async function cases(tokenizer, texts, pairs) {
  const out = []
  for (const text of texts) {
    const encoding = await tokenizer.encode(text)
    const entry = record(tokenizer, encoding, text)
    entry.decoded = await tokenizer.decode(entry.ids, true)
    out.push(entry)
  }
  for (const [first, second] of pairs) out.push(record(tokenizer, await tokenizer.encode(first, second), first, second))
  return out
}

const configs = [
  { name: 'uncased', dir: 'bert-base-uncased-tokenizer', tokenizer_config: null,
    options: { lowercase: true, stripAccents: true, chinese: true, maxInputCharsPerWord: 100 } },
  { name: 'cased', dir: 'bert-base-cased-tokenizer', tokenizer_config: null,
    options: { lowercase: false, stripAccents: false, chinese: true, maxInputCharsPerWord: 100 } },
  // tokenizer_config.json keys beyond do_lower_case must be honoured too
  { name: 'uncased-keep-accents-no-cjk', dir: 'bert-base-uncased-tokenizer',
    tokenizer_config: { do_lower_case: true, strip_accents: false, tokenize_chinese_chars: false },
    options: { lowercase: true, stripAccents: false, chinese: false, maxInputCharsPerWord: 100 } },
  { name: 'cased-strip-accents', dir: 'bert-base-cased-tokenizer',
    tokenizer_config: { do_lower_case: false, strip_accents: true },
    options: { lowercase: false, stripAccents: true, chinese: true, maxInputCharsPerWord: 100 } },
]

const version = JSON.parse(
  fs.readFileSync(path.join(process.cwd(), 'node_modules', 'tokenizers', 'package.json'), 'utf8'),
).version
const result = { generator: 'tests/data/wordpiece/make_expectations.mjs', tokenizers_version: version, configs: [] }
for (const config of configs) {
  const vocab = readVocab(path.join(shared, config.dir, 'vocab.txt'))
  const tokenizer = bertTokenizer(vocab, config.options)
  result.configs.push({
    name: config.name,
    vocab_dir: config.dir,
    tokenizer_config: config.tokenizer_config,
    cases: await cases(tokenizer, TEXTS, PAIRS),
  })
}
fs.writeFileSync(path.join(here, 'expectations.json'), JSON.stringify(result, null, 0).replace(/\{"text"/g, '\n{"text"') + '\n')

// A tiny tokenizer.json in Hugging Face's own format, with settings that differ from the defaults
// (no lower-casing but accent stripping, no CJK splitting, 12-character words, special tokens at
// other ids), to test tokenizer.json loading without copying the shared vocabularies.
const tinyTokens = ['[UNK]', 'hello', 'world', '!', ',', '.', '?', 'un', '##aff', '##able', '##a', '##ff', 'a', '##b',
  '##c', 'b', 'c', 'cafe', 'Cafe', 'naive', '[PAD]', '[CLS]', '[SEP]', '[MASK]', 'Hello', 'World', '日', '本', '日本',
  'the', '##s', 'x', '##x', '-', 'e', '##e']
const tinyVocab = Object.fromEntries(tinyTokens.map((token, id) => [token, id]))
const tiny = bertTokenizer(tinyVocab, { lowercase: false, stripAccents: true, chinese: false, maxInputCharsPerWord: 12 })
fs.mkdirSync(path.join(here, 'tiny-tokenizer'), { recursive: true })
tiny.save(path.join(here, 'tiny-tokenizer', 'tokenizer.json'), true)
const tinyTexts = ['Hello world!', 'unaffable unaffa unaffablea', 'Café naïve, cafe.', 'abcabc abbb xxxxxxxxxxxx xxxxxxxxxxxxx',
  '日本 日本語', 'the [MASK] is here', 'e\u0301e\u0301e\u0301-e', 'HELLO World?', '']
const tinyPairs = [['Hello', 'world [SEP] x']]
fs.writeFileSync(path.join(here, 'tiny-tokenizer', 'expectations.json'),
  JSON.stringify({ generator: result.generator, tokenizers_version: version, cases: await cases(tiny, tinyTexts, tinyPairs) }) + '\n')
let total = 0
for (const config of result.configs) total += config.cases.length
console.log(`wrote ${total} cases for ${result.configs.length} configurations and ${tinyTexts.length + tinyPairs.length} tiny cases`)
