#!/usr/bin/python3
"""Trains the demo checkpoints in resources/demo from the passages the project wrote itself.

Nothing is downloaded: the byte-level BPE vocabulary, a small RobertaForMaskedLM and a
RobertaForQuestionAnswering fine-tuned from it are all learned here from resources/demo/corpus, on
CPU, with fixed seeds and one thread so that a rerun gives the same files. The BERT demo is made the
same way from a WordPiece vocabulary learned here (uncased, "##" continuations): a BertForMaskedLM
is pre-trained (not shipped) and a BertForQuestionAnswering fine-tuned from it. Only PyTorch is
needed (Debian: python3-torch); the Hugging Face model code and file formats are written out by hand.

  train_demo.py train                 RoBERTa: learn the vocabulary, pre-train the MLM, fine-tune QA, save
  train_demo.py train-bert            BERT: the same, saving only bert-qa-float
  train_demo.py verify-tokenizer CLI [--family roberta|bert|all]
                                      the C++ tokenizer must give the same ids on every demo text
  train_demo.py measure CLI [--family roberta|bert|defect|all]
                                      run the family's demo checkpoints through the C++ CLI and
                                      record them in resources/demo/expectations.json (defect:
                                      qa-fp8-defect against qa-float, nothing else recorded anew)
"""
import argparse
import collections
import json
import math
import os
import re
import struct
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
DEMO = os.path.join(REPO, "resources", "demo")
CORPUS = os.path.join(DEMO, "corpus")

SPECIAL_TOKENS = ["<s>", "<pad>", "</s>", "<unk>"]
MASK_TOKEN = "<mask>"
BOS, PAD, EOS, UNK = 0, 1, 2, 3

# Sizes of the demo models: small enough to train on one core in minutes and to keep the four
# bundled checkpoints well under 25 MB, large enough to fit the passages.
HIDDEN = 128
LAYERS = 4
HEADS = 4
INTERMEDIATE = 512
# 384 usable positions (RoBERTa spends pad_token_id + 1 of them), so the CLI's default
# --max-seq-len 384 works with these checkpoints.
MAX_POSITIONS = 386
LAYER_NORM_EPS = 1e-5
TARGET_VOCAB = 2500
SEED = 20240611

# BERT's WordPiece conventions ([PAD] = 0 as in Hugging Face's BERT vocabularies); BERT's positions
# start at 0, so 384 of them give the CLI's default --max-seq-len 384.
BERT_SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
BERT_PAD, BERT_UNK, BERT_CLS, BERT_SEP, BERT_MASK = 0, 1, 2, 3, 4
BERT_MAX_POSITIONS = 384
BERT_LAYER_NORM_EPS = 1e-12
# Hugging Face's BertTokenizer maps a word longer than this to [UNK].
BERT_MAX_WORD_CHARS = 100


class Family:
    """What the model code and the checkpoint files need to know about an encoder family."""

    def __init__(self, name, prefix, model_type, max_positions, layer_norm_eps, type_vocab_size, pad_id, config_ids):
        self.name = name
        self.prefix = prefix  # module prefix of the encoder in tensor names
        self.model_type = model_type
        self.max_positions = max_positions
        self.layer_norm_eps = layer_norm_eps
        self.type_vocab_size = type_vocab_size
        self.pad_id = pad_id
        self.config_ids = config_ids  # the special token ids config.json names


ROBERTA = Family("roberta", "roberta", "roberta", MAX_POSITIONS, LAYER_NORM_EPS, 1, PAD,
                 {"pad_token_id": PAD, "bos_token_id": BOS, "eos_token_id": EOS})
BERT = Family("bert", "bert", "bert", BERT_MAX_POSITIONS, BERT_LAYER_NORM_EPS, 2, BERT_PAD,
              {"pad_token_id": BERT_PAD})

# GPT-2's pre-tokenisation, written for ASCII text (the corpus is ASCII, which the trainer checks).
PRETOKENIZE = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+""")


def log(message):
    print(time.strftime("%H:%M:%S"), message, flush=True)


# ----------------------------------------------------------------------------------------------
# Corpus


def load_questions():
    with open(os.path.join(CORPUS, "questions.json")) as f:
        return json.load(f)


def passages_and_examples():
    """Returns the passages and the QA examples (question, context, answer text, answer start)."""
    squad = load_questions()
    passages, examples = [], []
    for article in squad["data"]:
        for paragraph in article["paragraphs"]:
            context = paragraph["context"]
            passages.append(context)
            for qa in paragraph["qas"]:
                answer = qa["answers"][0]
                if context[answer["answer_start"]:answer["answer_start"] + len(answer["text"])] != answer["text"]:
                    sys.exit("questions.json: the answer of %s is not at its answer_start." % qa["id"])
                examples.append((qa["id"], qa["question"], context, answer["text"], answer["answer_start"]))
    for text in passages + [e[1] for e in examples]:
        if any(ord(c) > 127 for c in text):
            sys.exit("The demo corpus must be ASCII (the pre-tokeniser pattern here assumes it): %r" % text[:60])
    return passages, examples


def load_mask_sentences():
    with open(os.path.join(CORPUS, "mask_sentences.json")) as f:
        return json.load(f)


def split_sentences(passage):
    # The passages are plain prose: a sentence ends at ". " followed by a capital letter.
    return [s for s in re.split(r"(?<=[.!?]) (?=[A-Z])", passage) if s]


# ----------------------------------------------------------------------------------------------
# Byte-level BPE (GPT-2 / RoBERTa conventions)


def bytes_to_unicode():
    """GPT-2's reversible map from bytes to printable characters, in GPT-2's order."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    chars = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return dict(zip(printable, (chr(c) for c in chars)))


BYTE_ENCODER = bytes_to_unicode()
BYTE_DECODER = {symbol: byte for byte, symbol in BYTE_ENCODER.items()}


def pretokens(text):
    return PRETOKENIZE.findall(text)


def to_symbols(pretoken):
    return "".join(BYTE_ENCODER[b] for b in pretoken.encode("utf-8"))


def learn_bpe(texts, target_vocab):
    """Learns merges by repeatedly joining the most frequent adjacent pair (ties: smallest pair),
    until the vocabulary reaches target_vocab or no pair occurs twice."""
    word_counts = collections.Counter()
    for text in texts:
        for pretoken in pretokens(text):
            word_counts[to_symbols(pretoken)] += 1
    words = [(list(w), c) for w, c in sorted(word_counts.items())]
    byte_symbols = list(BYTE_ENCODER.values())
    vocab = SPECIAL_TOKENS + byte_symbols
    known = set(vocab)
    merges = []
    while len(vocab) + 1 < target_vocab:  # + 1 for <mask>
        pairs = collections.Counter()
        for symbols, count in words:
            for a, b in zip(symbols, symbols[1:]):
                pairs[(a, b)] += count
        if not pairs:
            break
        best = min(pairs.items(), key=lambda item: (-item[1], item[0]))
        if best[1] < 2:
            break
        a, b = best[0]
        merges.append((a, b))
        if a + b not in known:
            known.add(a + b)
            vocab.append(a + b)
        for symbols, _ in words:
            i = 0
            while i < len(symbols) - 1:
                if symbols[i] == a and symbols[i + 1] == b:
                    symbols[i:i + 2] = [a + b]
                i += 1
    vocab.append(MASK_TOKEN)
    return vocab, merges


class Tokenizer:
    """Encodes like the C++ BpeTokenizer: lowest-rank merge first, "<mask>" recognised in text with
    the whitespace before it absorbed, offsets in characters without the folded leading space."""

    family = ROBERTA
    pad_id = PAD
    special_ids = (BOS, EOS, PAD)  # never chosen for masking

    def __init__(self, vocab, merges):
        self.vocab = vocab
        self.ids = {token: i for i, token in enumerate(vocab)}
        self.ranks = {pair: i for i, pair in enumerate(merges)}
        self.mask_id = self.ids[MASK_TOKEN]
        # Masking's random replacements: every token but the special ones and <mask> (the last).
        self.random_tokens = (len(SPECIAL_TOKENS), self.mask_id)
        self.cache = {}

    def bpe(self, symbols_text):
        if symbols_text in self.cache:
            return self.cache[symbols_text]
        parts = list(symbols_text)
        while len(parts) > 1:
            ranked = [(self.ranks.get(p, math.inf), i) for i, p in enumerate(zip(parts, parts[1:]))]
            rank, _ = min(ranked)
            if rank == math.inf:
                break
            pair = None
            for r, i in ranked:
                if r == rank:
                    pair = (parts[i], parts[i + 1])
                    break
            merged, i = [], 0
            while i < len(parts):
                if i < len(parts) - 1 and (parts[i], parts[i + 1]) == pair:
                    merged.append(parts[i] + parts[i + 1])
                    i += 2
                else:
                    merged.append(parts[i])
                    i += 1
            parts = merged
        self.cache[symbols_text] = parts
        return parts

    def encode_plain(self, text, base=0):
        ids, offsets = [], []
        position = 0
        for pretoken in pretokens(text):
            start = text.index(pretoken, position)
            position = start + len(pretoken)
            cursor = start
            for part in self.bpe(to_symbols(pretoken)):
                length = len(part)  # ASCII: one symbol per character
                begin, end = cursor, cursor + length
                cursor = end
                # Hugging Face's trim_offsets: drop leading and trailing whitespace from the span,
                # except the leading space of a token at the very start of the text.
                piece = text[begin:end]
                leading = len(piece) - len(piece.lstrip())
                trailing = len(piece) - len(piece.rstrip())
                if leading and base + begin != 0:
                    begin = min(begin + leading, end)
                if trailing:
                    end = max(end - trailing, begin)
                ids.append(self.ids.get(part, UNK))
                offsets.append((base + begin, base + end))
        return ids, offsets

    def encode_text(self, text):
        ids, offsets = [], []
        segment_start = 0
        while True:
            at = text.find(MASK_TOKEN, segment_start)
            if at < 0:
                break
            segment_end = at
            while segment_end > segment_start and text[segment_end - 1].isspace():
                segment_end -= 1
            seg_ids, seg_offsets = self.encode_plain(text[segment_start:segment_end], segment_start)
            ids += seg_ids + [self.mask_id]
            offsets += seg_offsets + [(at, at + len(MASK_TOKEN))]
            segment_start = at + len(MASK_TOKEN)
        seg_ids, seg_offsets = self.encode_plain(text[segment_start:], segment_start)
        return ids + seg_ids, offsets + seg_offsets

    def encode(self, text):
        ids, offsets = self.encode_text(text)
        return [BOS] + ids + [EOS], [(0, 0)] + offsets + [(0, 0)]

    def encode_pair(self, first, second):
        """Returns ids, offsets and the index of the first token of `second`."""
        a, a_off = self.encode_text(first)
        b, b_off = self.encode_text(second)
        ids = [BOS] + a + [EOS, EOS] + b + [EOS]
        offsets = [(0, 0)] + a_off + [(0, 0), (0, 0)] + b_off + [(0, 0)]
        return ids, offsets, len(a) + 3

    def pair_types(self, ids, context_begin):
        return None  # RoBERTa has one token type

    def decode_token(self, token_id):
        return bytes(BYTE_DECODER[c] for c in self.vocab[token_id]).decode("utf-8", "replace")


def save_tokenizer(directory, vocab, merges):
    with open(os.path.join(directory, "vocab.json"), "w") as f:
        json.dump({token: i for i, token in enumerate(vocab)}, f, ensure_ascii=False)
    with open(os.path.join(directory, "merges.txt"), "w") as f:
        f.write("#version: 0.2\n")
        for a, b in merges:
            f.write("%s %s\n" % (a, b))


def load_tokenizer(directory):
    with open(os.path.join(directory, "vocab.json")) as f:
        mapping = json.load(f)
    vocab = [None] * len(mapping)
    for token, i in mapping.items():
        vocab[i] = token
    with open(os.path.join(directory, "merges.txt")) as f:
        merges = [tuple(line.rstrip("\n").split(" ")) for line in f if not line.startswith("#version") and line.strip()]
    return Tokenizer(vocab, merges)


# ----------------------------------------------------------------------------------------------
# WordPiece (BERT uncased conventions). The corpus is ASCII, so Hugging Face's BasicTokenizer comes
# down to: lower-case, split at whitespace, and make every ASCII punctuation character a word.


def is_bert_punctuation(c):
    # BERT counts every non-alphanumeric printable ASCII character as punctuation ("$", "^", "`" too).
    return 33 <= ord(c) <= 47 or 58 <= ord(c) <= 64 or 91 <= ord(c) <= 96 or 123 <= ord(c) <= 126


def bert_words(text):
    """(start, end) character spans of the words of ASCII text, as BERT's BasicTokenizer splits it."""
    spans, start = [], None
    for i, c in enumerate(text):
        if c.isspace() or is_bert_punctuation(c) or ord(c) < 32 or ord(c) == 127:
            if start is not None:
                spans.append((start, i))
                start = None
            if is_bert_punctuation(c):
                spans.append((i, i + 1))
        elif start is None:
            start = i
    if start is not None:
        spans.append((start, len(text)))
    return spans


def learn_wordpiece(texts, target_vocab):
    """Learns a WordPiece vocabulary as Hugging Face's WordPieceTrainer does: every character of a
    word (continuations as "##c"), then repeatedly the most frequent adjacent pair joined (ties:
    smallest pair), until the vocabulary reaches target_vocab or no pair occurs twice. Letters and
    digits are all in the vocabulary, alone and as continuations, so no ASCII word is [UNK]."""
    word_counts = collections.Counter()
    for text in texts:
        lowered = text.lower()
        for start, end in bert_words(lowered):
            word_counts[lowered[start:end]] += 1
    words = [([w[0]] + ["##" + c for c in w[1:]], count) for w, count in sorted(word_counts.items())]
    characters = set("abcdefghijklmnopqrstuvwxyz0123456789")
    for word, _ in word_counts.items():
        characters.update(word)
    alphabet = sorted(characters)
    vocab = BERT_SPECIAL_TOKENS + alphabet + ["##" + c for c in alphabet if not is_bert_punctuation(c)]
    known = set(vocab)
    while len(vocab) < target_vocab:
        pairs = collections.Counter()
        for symbols, count in words:
            for a, b in zip(symbols, symbols[1:]):
                pairs[(a, b)] += count
        if not pairs:
            break
        best = min(pairs.items(), key=lambda item: (-item[1], item[0]))
        if best[1] < 2:
            break
        a, b = best[0]
        joined = a + b[2:]  # b is always a continuation
        if joined not in known:
            known.add(joined)
            vocab.append(joined)
        for symbols, _ in words:
            i = 0
            while i < len(symbols) - 1:
                if symbols[i] == a and symbols[i + 1] == b:
                    symbols[i:i + 2] = [joined]
                i += 1
    return vocab


class WordPieceTokenizer:
    """Encodes like the C++ WordPieceTokenizer with vocab.txt and do_lower_case (and Hugging Face's
    BertTokenizerFast): special tokens written in the text are matched literally, every other word
    is split greedily into the longest vocabulary pieces, a word with an unmatched part is [UNK];
    offsets are character offsets into the original text."""

    family = BERT
    pad_id = BERT_PAD
    special_ids = (BERT_PAD, BERT_CLS, BERT_SEP)

    def __init__(self, vocab):
        self.vocab = vocab
        self.ids = {token: i for i, token in enumerate(vocab)}
        self.mask_id = BERT_MASK
        self.random_tokens = (len(BERT_SPECIAL_TOKENS), len(vocab))
        self.longest_piece = max(len(t[2:] if t.startswith("##") else t) for t in vocab)

    def encode_word(self, word, base):
        if len(word) > BERT_MAX_WORD_CHARS:
            return [BERT_UNK], [(base, base + len(word))]
        ids, offsets, start = [], [], 0
        while start < len(word):
            stop = min(len(word), start + self.longest_piece)
            while stop > start and ("##" if start else "") + word[start:stop] not in self.ids:
                stop -= 1
            if stop == start:
                return [BERT_UNK], [(base, base + len(word))]
            ids.append(self.ids[("##" if start else "") + word[start:stop]])
            offsets.append((base + start, base + stop))
            start = stop
        return ids, offsets

    def encode_plain(self, text, base):
        ids, offsets = [], []
        lowered = text.lower()
        for start, end in bert_words(lowered):
            word_ids, word_offsets = self.encode_word(lowered[start:end], base + start)
            ids += word_ids
            offsets += word_offsets
        return ids, offsets

    def encode_text(self, text):
        ids, offsets = [], []
        segment_start = 0
        while True:
            found = [(text.find(t, segment_start), -len(t), t) for t in BERT_SPECIAL_TOKENS]
            found = [f for f in found if f[0] >= 0]
            if not found:
                break
            at, _, token = min(found)  # leftmost, then longest
            seg_ids, seg_offsets = self.encode_plain(text[segment_start:at], segment_start)
            ids += seg_ids + [self.ids[token]]
            offsets += seg_offsets + [(at, at + len(token))]
            segment_start = at + len(token)
        seg_ids, seg_offsets = self.encode_plain(text[segment_start:], segment_start)
        return ids + seg_ids, offsets + seg_offsets

    def encode(self, text):
        ids, offsets = self.encode_text(text)
        return [BERT_CLS] + ids + [BERT_SEP], [(0, 0)] + offsets + [(0, 0)]

    def encode_pair(self, first, second):
        """Returns ids, offsets and the index of the first token of `second`."""
        a, a_off = self.encode_text(first)
        b, b_off = self.encode_text(second)
        ids = [BERT_CLS] + a + [BERT_SEP] + b + [BERT_SEP]
        offsets = [(0, 0)] + a_off + [(0, 0)] + b_off + [(0, 0)]
        return ids, offsets, len(a) + 2

    def pair_types(self, ids, context_begin):
        # Token type 0 for [CLS] A [SEP], 1 for B [SEP].
        return [0] * context_begin + [1] * (len(ids) - context_begin)

    def decode_token(self, token_id):
        return self.vocab[token_id]


def save_wordpiece_tokenizer(directory, vocab):
    with open(os.path.join(directory, "vocab.txt"), "w") as f:
        f.write("".join(token + "\n" for token in vocab))
    config = {"do_lower_case": True, "tokenizer_class": "BertTokenizer", "model_max_length": BERT_MAX_POSITIONS,
              "unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]",
              "mask_token": "[MASK]"}
    with open(os.path.join(directory, "tokenizer_config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")


def load_wordpiece_tokenizer(directory):
    with open(os.path.join(directory, "vocab.txt")) as f:
        return WordPieceTokenizer([line.rstrip("\n") for line in f])


# ----------------------------------------------------------------------------------------------
# RoBERTa and BERT in plain torch.nn, with Hugging Face's module names so that state_dict() keys are the
# checkpoint's tensor names.


def build_models(family=ROBERTA):
    """Returns the family's (ForMaskedLM, ForQuestionAnswering) classes. Both families share the
    encoder; they differ in positions, token types, LayerNorm epsilon and the names of the encoder
    and the MLM head (Hugging Face's, so that state_dict() keys are the checkpoint's tensor names)."""
    import torch
    from torch import nn
    import torch.nn.functional as F

    bert = family is BERT
    pad = family.pad_id
    eps = family.layer_norm_eps

    class Embeddings(nn.Module):
        def __init__(self, vocab_size):
            super().__init__()
            self.word_embeddings = nn.Embedding(vocab_size, HIDDEN, padding_idx=pad)
            # RoBERTa's padding positions share the (zero) position pad_token_id; BERT's positions
            # are plain 0, 1, 2, ...
            self.position_embeddings = nn.Embedding(family.max_positions, HIDDEN, padding_idx=None if bert else pad)
            self.token_type_embeddings = nn.Embedding(family.type_vocab_size, HIDDEN)
            self.LayerNorm = nn.LayerNorm(HIDDEN, eps=eps)
            self.dropout = nn.Dropout(0.1)

        def forward(self, ids, token_types=None):
            if bert:
                positions = torch.arange(ids.shape[1]).expand_as(ids)
                types = self.token_type_embeddings(token_types if token_types is not None else torch.zeros_like(ids))
            else:
                not_pad = (ids != pad).long()
                positions = torch.cumsum(not_pad, dim=1) * not_pad + pad
                types = self.token_type_embeddings.weight[0]
            x = self.word_embeddings(ids) + self.position_embeddings(positions) + types
            return self.dropout(self.LayerNorm(x))

    class SelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.query = nn.Linear(HIDDEN, HIDDEN)
            self.key = nn.Linear(HIDDEN, HIDDEN)
            self.value = nn.Linear(HIDDEN, HIDDEN)
            self.dropout = nn.Dropout(0.1)

        def forward(self, x, additive_mask):
            batch, seq, _ = x.shape
            head = HIDDEN // HEADS

            def split(t):
                return t.view(batch, seq, HEADS, head).transpose(1, 2)

            q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
            scores = q @ k.transpose(-1, -2) / math.sqrt(head) + additive_mask
            weights = self.dropout(torch.softmax(scores, dim=-1))
            return (weights @ v).transpose(1, 2).reshape(batch, seq, HIDDEN)

    class DenseNorm(nn.Module):
        """Hugging Face's RobertaSelfOutput / RobertaOutput: dense, dropout, residual, LayerNorm."""

        def __init__(self, inputs):
            super().__init__()
            self.dense = nn.Linear(inputs, HIDDEN)
            self.LayerNorm = nn.LayerNorm(HIDDEN, eps=eps)
            self.dropout = nn.Dropout(0.1)

        def forward(self, x, residual):
            return self.LayerNorm(self.dropout(self.dense(x)) + residual)

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.self = SelfAttention()
            self.output = DenseNorm(HIDDEN)

        def forward(self, x, additive_mask):
            return self.output(self.self(x, additive_mask), x)

    class Intermediate(nn.Module):
        def __init__(self):
            super().__init__()
            self.dense = nn.Linear(HIDDEN, INTERMEDIATE)

        def forward(self, x):
            return F.gelu(self.dense(x))  # exact (erf) GELU, as hidden_act "gelu" means

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.attention = Attention()
            self.intermediate = Intermediate()
            self.output = DenseNorm(INTERMEDIATE)

        def forward(self, x, additive_mask):
            attended = self.attention(x, additive_mask)
            return self.output(self.intermediate(attended), attended)

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = nn.ModuleList([Layer() for _ in range(LAYERS)])

        def forward(self, x, additive_mask):
            for layer in self.layer:
                x = layer(x, additive_mask)
            return x

    class Roberta(nn.Module):
        """RobertaModel or BertModel without the pooler (the QA and MLM models have none)."""

        def __init__(self, vocab_size):
            super().__init__()
            self.embeddings = Embeddings(vocab_size)
            self.encoder = Encoder()

        def forward(self, ids, attention_mask, token_types=None):
            additive = (1.0 - attention_mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
            return self.encoder(self.embeddings(ids, token_types), additive)

    def init_weights(module):
        # Hugging Face's RoBERTa initialisation.
        for m in module.modules():
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, std=0.02)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Embedding):
                nn.init.normal_(m.weight, std=0.02)
                if m.padding_idx is not None:
                    with torch.no_grad():
                        m.weight[m.padding_idx].zero_()
            elif isinstance(m, nn.LayerNorm):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)

    class LmHead(nn.Module):
        """RoBERTa's lm_head: dense, GELU, layer_norm, then the tied decoder with its own bias."""

        def __init__(self, vocab_size):
            super().__init__()
            self.dense = nn.Linear(HIDDEN, HIDDEN)
            self.layer_norm = nn.LayerNorm(HIDDEN, eps=eps)
            self.bias = nn.Parameter(torch.zeros(vocab_size))

        def forward(self, x, tied_weight):
            return F.linear(self.layer_norm(F.gelu(self.dense(x))), tied_weight, self.bias)

    class BertTransform(nn.Module):
        def __init__(self):
            super().__init__()
            self.dense = nn.Linear(HIDDEN, HIDDEN)
            self.LayerNorm = nn.LayerNorm(HIDDEN, eps=eps)

    class BertPredictions(nn.Module):
        """BERT's cls.predictions: the same computation as LmHead under BERT's names."""

        def __init__(self, vocab_size):
            super().__init__()
            self.transform = BertTransform()
            self.bias = nn.Parameter(torch.zeros(vocab_size))

        def forward(self, x, tied_weight):
            hidden = self.transform.LayerNorm(F.gelu(self.transform.dense(x)))
            return F.linear(hidden, tied_weight, self.bias)

    class BertHeads(nn.Module):
        def __init__(self, vocab_size):
            super().__init__()
            self.predictions = BertPredictions(vocab_size)

    class ForMaskedLM(nn.Module):
        def __init__(self, vocab_size):
            super().__init__()
            setattr(self, family.prefix, Roberta(vocab_size))
            if bert:
                self.cls = BertHeads(vocab_size)
            else:
                self.lm_head = LmHead(vocab_size)
            init_weights(self)

        def encoder_model(self):
            return getattr(self, family.prefix)

        def forward(self, ids, attention_mask, positions=None, token_types=None):
            hidden = self.encoder_model()(ids, attention_mask, token_types)
            if positions is not None:
                hidden = hidden[positions]
            head = self.cls.predictions if bert else self.lm_head
            return head(hidden, self.encoder_model().embeddings.word_embeddings.weight)

    class ForQuestionAnswering(nn.Module):
        def __init__(self, vocab_size):
            super().__init__()
            setattr(self, family.prefix, Roberta(vocab_size))
            self.qa_outputs = nn.Linear(HIDDEN, 2)
            init_weights(self)

        def encoder_model(self):
            return getattr(self, family.prefix)

        def forward(self, ids, attention_mask, token_types=None):
            logits = self.qa_outputs(self.encoder_model()(ids, attention_mask, token_types))
            return logits[..., 0], logits[..., 1]

    return ForMaskedLM, ForQuestionAnswering


# ----------------------------------------------------------------------------------------------
# Hugging Face folder: config.json + model.safetensors (written by hand: 8-byte little-endian
# header length, JSON header padded with spaces to a multiple of 8, raw little-endian data).


def save_safetensors(path, tensors):
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous().float().cpu()
        data = t.numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    encoded = json.dumps(header, separators=(",", ":")).encode("utf-8")
    encoded += b" " * ((8 - len(encoded) % 8) % 8)
    temporary = path + ".tmp"
    with open(temporary, "wb") as f:
        f.write(struct.pack("<Q", len(encoded)))
        f.write(encoded)
        for blob in blobs:
            f.write(blob)
    os.replace(temporary, path)


def save_checkpoint(directory, model, architecture, vocab, merges, family=ROBERTA):
    """Writes config.json, model.safetensors and the tokenizer (merges None: a WordPiece vocab.txt)."""
    os.makedirs(directory, exist_ok=True)
    config = {
        "architectures": [architecture],
        "model_type": family.model_type,
        "vocab_size": len(vocab),
        "hidden_size": HIDDEN,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS,
        "intermediate_size": INTERMEDIATE,
        "max_position_embeddings": family.max_positions,
        "type_vocab_size": family.type_vocab_size,
        "layer_norm_eps": family.layer_norm_eps,
        **family.config_ids,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "initializer_range": 0.02,
        "torch_dtype": "float32",
    }
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    save_safetensors(os.path.join(directory, "model.safetensors"), model.state_dict())
    if merges is None:
        save_wordpiece_tokenizer(directory, vocab)
    else:
        save_tokenizer(directory, vocab, merges)


# ----------------------------------------------------------------------------------------------
# Training


def pad_batch(torch, sequences, pad=PAD):
    length = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), length), pad, dtype=torch.long)
    for i, s in enumerate(sequences):
        ids[i, :len(s)] = torch.tensor(s, dtype=torch.long)
    return ids, (ids != pad).long()


def length_grouped_batches(torch, count, lengths, batch_size, generator):
    """A shuffled epoch in which each batch holds sequences of similar length (less padding):
    shuffle, sort within groups of 8 batches, then shuffle the batch order."""
    order = torch.randperm(count, generator=generator).tolist()
    group = batch_size * 8
    batches = []
    for g in range(0, count, group):
        chunk = sorted(order[g:g + group], key=lambda i: lengths[i])
        batches += [chunk[b:b + batch_size] for b in range(0, len(chunk), batch_size)]
    permutation = torch.randperm(len(batches), generator=generator).tolist()
    return [batches[i] for i in permutation]


def linear_schedule(step, total, warmup):
    if step < warmup:
        return (step + 1) / warmup
    return max(0.0, (total - step) / max(1, total - warmup))


def mask_tokens(torch, ids, tokenizer, generator):
    """BERT's masking: 15% of the real tokens are chosen; of those 80% become the mask token, 10% a
    random token, 10% stay. Every sequence gets at least one chosen token."""
    mask_id = tokenizer.mask_id
    first, second, third = tokenizer.special_ids
    special = (ids == first) | (ids == second) | (ids == third)
    chosen = (torch.rand(ids.shape, generator=generator) < 0.15) & ~special
    for row in range(ids.shape[0]):
        if not chosen[row].any():
            candidates = (~special[row]).nonzero().flatten()
            pick = candidates[torch.randint(len(candidates), (1,), generator=generator)]
            chosen[row, pick] = True
    labels = ids[chosen]
    inputs = ids.clone()
    roll = torch.rand(ids.shape, generator=generator)
    inputs[chosen & (roll < 0.8)] = mask_id
    random_tokens = torch.randint(tokenizer.random_tokens[0], tokenizer.random_tokens[1], ids.shape, generator=generator)
    replace = chosen & (roll >= 0.8) & (roll < 0.9)
    inputs[replace] = random_tokens[replace]
    return inputs, chosen, labels


def fill_mask_top5(torch, model, tokenizer, sentences):
    model.eval()
    hits = 0
    with torch.no_grad():
        for item in sentences:
            ids, _ = tokenizer.encode(item["text"])
            tensor = torch.tensor([ids])
            position = ids.index(tokenizer.mask_id)
            logits = model(tensor, torch.ones_like(tensor))[0, position]
            top = torch.topk(logits, 5).indices.tolist()
            hits += any(tokenizer.decode_token(t).strip() == item["answer"] for t in top)
    model.train()
    return hits / max(1, len(sentences))


def train_mlm(torch, ForMaskedLM, tokenizer, passages, examples, mask_sentences, steps):
    sequences = []
    for passage in passages:
        sequences.append(tokenizer.encode(passage)[0])
        sequences += [tokenizer.encode(s)[0] for s in split_sentences(passage)]
    sequences += [tokenizer.encode(e[1])[0] for e in examples]
    lengths = [len(s) for s in sequences]
    log("MLM: %d sequences (%d passages), longest %d tokens, %d steps" % (len(sequences), len(passages), max(lengths), steps))

    torch.manual_seed(SEED)
    model = ForMaskedLM(len(tokenizer.vocab))
    decay = [p for n, p in model.named_parameters() if not ("bias" in n or "LayerNorm" in n or "layer_norm" in n)]
    no_decay = [p for n, p in model.named_parameters() if "bias" in n or "LayerNorm" in n or "layer_norm" in n]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                                  lr=1e-3, betas=(0.9, 0.98), eps=1e-6)
    generator = torch.Generator().manual_seed(SEED)
    batch_size = 32
    step, started, running = 0, time.time(), 0.0
    model.train()
    while step < steps:
        for batch in length_grouped_batches(torch, len(sequences), lengths, batch_size, generator):
            if step >= steps:
                break
            ids, attention = pad_batch(torch, [sequences[i] for i in batch], tokenizer.pad_id)
            inputs, chosen, labels = mask_tokens(torch, ids, tokenizer, generator)
            for group in optimizer.param_groups:
                group["lr"] = 1e-3 * linear_schedule(step, steps, steps // 20)
            logits = model(inputs, attention, chosen)
            loss = torch.nn.functional.cross_entropy(logits, labels)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            running = 0.98 * running + 0.02 * loss.item() if step else loss.item()
            step += 1
            if step % 100 == 0 or step == steps:
                message = "MLM step %d/%d loss %.3f (%.0f s)" % (step, steps, running, time.time() - started)
                if step % 500 == 0 or step == steps:
                    message += ", fill-mask top-5 %.3f" % fill_mask_top5(torch, model, tokenizer, mask_sentences)
                log(message)
    model.eval()
    return model


def usable_positions(family):
    # RoBERTa spends pad_token_id + 1 positions before the first token.
    return family.max_positions - PAD - 1 if family is ROBERTA else family.max_positions


def feature_types(torch, features):
    """The token types of a batch of QA features padded to the longest, or None for RoBERTa."""
    if features[0]["types"] is None:
        return None
    length = max(len(f["types"]) for f in features)
    return torch.tensor([f["types"] + [0] * (length - len(f["types"])) for f in features])


def qa_features(tokenizer, examples):
    features = []
    for example_id, question, context, answer, answer_start in examples:
        ids, offsets, context_begin = tokenizer.encode_pair(question, context)
        answer_end = answer_start + len(answer)
        start = end = None
        for i in range(context_begin, len(ids) - 1):
            begin, finish = offsets[i]
            if start is None and finish > answer_start:
                start = i
            if begin < answer_end:
                end = i
        if len(ids) > usable_positions(tokenizer.family):
            sys.exit("Question %s with its passage is %d tokens, more than the model's positions." % (example_id, len(ids)))
        features.append({"id": example_id, "ids": ids, "offsets": offsets, "context_begin": context_begin,
                         "types": tokenizer.pair_types(ids, context_begin),
                         "start": start, "end": end, "context": context, "answer": answer})
    return features


def best_span(start_logits, end_logits, context_begin, context_end, max_answer_tokens=30):
    best, best_score = (context_begin, context_begin), -math.inf
    starts = sorted(range(context_begin, context_end), key=lambda i: -start_logits[i])[:20]
    ends = sorted(range(context_begin, context_end), key=lambda i: -end_logits[i])[:20]
    for s in starts:
        for e in ends:
            if s <= e < s + max_answer_tokens and start_logits[s] + end_logits[e] > best_score:
                best, best_score = (s, e), start_logits[s] + end_logits[e]
    return best


def qa_exact_match(torch, model, features):
    model.eval()
    correct = 0
    with torch.no_grad():
        for f in features:
            tensor = torch.tensor([f["ids"]])
            start_logits, end_logits = model(tensor, torch.ones_like(tensor), feature_types(torch, [f]))
            s, e = best_span(start_logits[0].tolist(), end_logits[0].tolist(), f["context_begin"], len(f["ids"]) - 1)
            text = f["context"][f["offsets"][s][0]:f["offsets"][e][1]]
            correct += normalize_answer(text) == normalize_answer(f["answer"])
    model.train()
    return correct / len(features)


def train_qa(torch, ForQuestionAnswering, mlm, tokenizer, examples, epochs):
    features = qa_features(tokenizer, examples)
    log("QA: %d examples, longest %d tokens, up to %d epochs" % (len(features), max(len(f["ids"]) for f in features), epochs))
    torch.manual_seed(SEED + 1)
    model = ForQuestionAnswering(len(tokenizer.vocab))
    model.encoder_model().load_state_dict(mlm.encoder_model().state_dict())
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.01, betas=(0.9, 0.98), eps=1e-6)
    generator = torch.Generator().manual_seed(SEED + 1)
    lengths = [len(f["ids"]) for f in features]
    batch_size = 16
    steps_per_epoch = math.ceil(len(features) / batch_size)
    total = epochs * steps_per_epoch
    step, started = 0, time.time()
    model.train()
    for epoch in range(epochs):
        epoch_loss = 0.0
        for batch in length_grouped_batches(torch, len(features), lengths, batch_size, generator):
            ids, attention = pad_batch(torch, [features[i]["ids"] for i in batch], tokenizer.pad_id)
            types = feature_types(torch, [features[i] for i in batch])
            starts = torch.tensor([features[i]["start"] for i in batch])
            ends = torch.tensor([features[i]["end"] for i in batch])
            for group in optimizer.param_groups:
                group["lr"] = 5e-4 * linear_schedule(step, total, total // 10)
            start_logits, end_logits = model(ids, attention, types)
            padding = attention == 0
            start_logits = start_logits.masked_fill(padding, -1e4)
            end_logits = end_logits.masked_fill(padding, -1e4)
            loss = (torch.nn.functional.cross_entropy(start_logits, starts) +
                    torch.nn.functional.cross_entropy(end_logits, ends)) / 2
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            epoch_loss += loss.item()
            step += 1
        message = "QA epoch %d/%d loss %.3f (%.0f s)" % (epoch + 1, epochs, epoch_loss / steps_per_epoch, time.time() - started)
        if (epoch + 1) % 5 == 0 or epoch + 1 == epochs:
            message += ", train exact match %.3f" % qa_exact_match(torch, model, features)
        log(message)
    model.eval()
    return model


def normalize_answer(text):
    text = text.lower()
    text = "".join(c for c in text if c not in set('!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~'))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def f1_score(prediction, gold):
    p, g = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not p or not g:
        return float(p == g)
    common = collections.Counter(p) & collections.Counter(g)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p), same / len(g)
    return 2 * precision * recall / (precision + recall)


def start_training():
    """PyTorch set up for a reproducible run: one thread, fixed seed, deterministic kernels."""
    import torch
    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True)
    return torch


def command_train(args):
    torch = start_training()
    started = time.time()
    passages, examples = passages_and_examples()
    vocab, merges = learn_bpe(passages + [e[1] for e in examples], TARGET_VOCAB)
    log("BPE: %d merges, vocabulary of %d" % (len(merges), len(vocab)))
    tokenizer = Tokenizer(vocab, merges)
    mask_sentences = load_mask_sentences() if os.path.exists(os.path.join(CORPUS, "mask_sentences.json")) else []
    for item in mask_sentences:
        ids, _ = tokenizer.encode_text(" " + item["answer"])
        if len(ids) != 1:
            sys.exit("mask_sentences.json: %r is not a single token of the demo vocabulary." % item["answer"])
        if item["text"].replace("<mask>", item["answer"]) not in " ".join(passages):
            sys.exit("mask_sentences.json: %r is not taken from a passage." % item["text"])
    if args.bpe_only:
        for directory in ("mlm-float", "qa-float"):
            os.makedirs(os.path.join(DEMO, directory), exist_ok=True)
            save_tokenizer(os.path.join(DEMO, directory), vocab, merges)
        return
    RobertaForMaskedLM, RobertaForQuestionAnswering = build_models()
    mlm = train_mlm(torch, RobertaForMaskedLM, tokenizer, passages, examples, mask_sentences, args.mlm_steps)
    save_checkpoint(os.path.join(DEMO, "mlm-float"), mlm, "RobertaForMaskedLM", vocab, merges)
    log("saved %s" % os.path.join(DEMO, "mlm-float"))
    qa = train_qa(torch, RobertaForQuestionAnswering, mlm, tokenizer, examples, args.qa_epochs)
    save_checkpoint(os.path.join(DEMO, "qa-float"), qa, "RobertaForQuestionAnswering", vocab, merges)
    log("saved %s; training took %.0f s" % (os.path.join(DEMO, "qa-float"), time.time() - started))


def bert_mask_sentences(tokenizer):
    """The demo's mask sentences written for BERT ([MASK], lower-case answers), keeping those whose
    answer is one WordPiece token (the others cannot be predicted by one mask)."""
    sentences = []
    for item in load_mask_sentences():
        answer = item["answer"].lower()
        if len(tokenizer.encode_text(answer)[0]) == 1:
            sentences.append({"text": item["text"].replace(MASK_TOKEN, "[MASK]"), "answer": answer})
    return sentences


def command_train_bert(args):
    # One BLAS thread too: set before torch loads OpenBLAS, whose idle threads otherwise spin on a
    # busy machine and take the CPU from the training thread.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch = start_training()
    started = time.time()
    passages, examples = passages_and_examples()
    vocab = learn_wordpiece(passages + [e[1] for e in examples], TARGET_VOCAB)
    log("WordPiece: vocabulary of %d" % len(vocab))
    tokenizer = WordPieceTokenizer(vocab)
    mask_sentences = bert_mask_sentences(tokenizer)
    ForMaskedLM, ForQuestionAnswering = build_models(BERT)
    mlm = train_mlm(torch, ForMaskedLM, tokenizer, passages, examples, mask_sentences, args.mlm_steps)
    qa = train_qa(torch, ForQuestionAnswering, mlm, tokenizer, examples, args.qa_epochs)
    save_checkpoint(args.output, qa, "BertForQuestionAnswering", vocab, None, BERT)
    log("saved %s; training took %.0f s" % (args.output, time.time() - started))


# ----------------------------------------------------------------------------------------------
# Checks against the project's C++ CLI


def run_cli(cli, arguments):
    # One compute thread, and one OpenBLAS thread: for models this small, more threads only
    # spin-wait, and a forward can take a second instead of milliseconds on a busy machine.
    environment = dict(os.environ, SCALESCOPE_THREADS="1", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    result = subprocess.run([cli] + arguments, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=environment)
    if result.returncode != 0:
        sys.exit("%s %s failed: %s" % (cli, " ".join(arguments[:2]), result.stderr.strip()))
    return json.loads(result.stdout)


def verify_roberta_tokenizer(cli, passages, examples):
    """Returns how many demo texts the C++ tokenizer of qa-float encodes differently."""
    checkpoint = os.path.join(DEMO, "qa-float")
    tokenizer = load_tokenizer(checkpoint)
    texts = passages + [e[1] for e in examples] + [m["text"] for m in load_mask_sentences()]
    mismatches = 0
    for text in texts:
        expected_ids, expected_offsets = tokenizer.encode(text)
        got = run_cli(cli, ["tokenize", checkpoint, "--text", text, "--json"])
        got_offsets = [tuple(o) for o in got["offsets"]]
        if got["input_ids"] != expected_ids or got_offsets != expected_offsets:
            mismatches += 1
            print("MISMATCH: %r" % text[:70])
    for e in examples[:40]:
        expected_ids, _, _ = tokenizer.encode_pair(e[1], e[2])
        got = run_cli(cli, ["tokenize", checkpoint, "--text", e[1], "--pair", e[2], "--json"])
        if got["input_ids"] != expected_ids:
            mismatches += 1
            print("PAIR MISMATCH: %r" % e[1])
    log("RoBERTa tokenizer check: %d texts and 40 pairs, %d mismatches" % (len(texts), mismatches))
    return mismatches


def verify_bert_tokenizer(cli, passages, examples):
    """Returns how many demo texts (and question-passage pairs, with their token types) the C++
    WordPiece tokenizer of bert-qa-float encodes differently from the trainer."""
    checkpoint = os.path.join(DEMO, "bert-qa-float")
    tokenizer = load_wordpiece_tokenizer(checkpoint)
    texts = passages + [e[1] for e in examples] + [m["text"].replace(MASK_TOKEN, "[MASK]") for m in load_mask_sentences()]
    mismatches = 0
    for text in texts:
        expected_ids, expected_offsets = tokenizer.encode(text)
        got = run_cli(cli, ["tokenize", checkpoint, "--text", text, "--json"])
        if got["input_ids"] != expected_ids or [tuple(o) for o in got["offsets"]] != expected_offsets:
            mismatches += 1
            print("MISMATCH: %r" % text[:70])
    for e in examples:
        expected_ids, expected_offsets, context_begin = tokenizer.encode_pair(e[1], e[2])
        got = run_cli(cli, ["tokenize", checkpoint, "--text", e[1], "--pair", e[2], "--json"])
        if (got["input_ids"] != expected_ids or [tuple(o) for o in got["offsets"]] != expected_offsets or
                got.get("token_type_ids") != tokenizer.pair_types(expected_ids, context_begin)):
            mismatches += 1
            print("PAIR MISMATCH: %r" % e[1])
    log("BERT tokenizer check: %d texts and %d pairs, %d mismatches" % (len(texts), len(examples), mismatches))
    return mismatches


def command_verify_tokenizer(args):
    passages, examples = passages_and_examples()
    mismatches = 0
    if args.family in ("roberta", "all"):
        mismatches += verify_roberta_tokenizer(args.cli, passages, examples)
    if args.family in ("bert", "all"):
        mismatches += verify_bert_tokenizer(args.cli, passages, examples)
    if mismatches:
        sys.exit(1)


def logits_sqnr_db(reference, logits):
    """DESIGN.md's SQNR, 10 log10(sum ref^2 / sum (ref - x)^2), over all the values given."""
    signal = sum(r * r for r in reference)
    noise = sum((r - x) * (r - x) for r, x in zip(reference, logits))
    return math.inf if noise == 0 else 10 * math.log10(signal / noise)


def measure_qa(cli, name, architecture, mode, examples, float_run=None):
    """Runs the demo questions through `scalescope-cli qa`. Returns (answers, logits, entry): the
    best answers, every start and end logit of every question in order, and the expectations
    entry (exact match, F1, and, given float_run = (answers, logits) of the float model, the
    agreement with its answers and the SQNR of these logits against its logits)."""
    directory = os.path.join(DEMO, name)
    predictions, logits = [], []
    for example_id, question, context, gold, _ in examples:
        out = run_cli(cli, ["qa", directory, "--question", question, "--context", context, "--mode", mode, "--json"])
        predictions.append(out["answers"][0]["text"] if out["answers"] else "")
        for window in range(len(out["start_logits"])):
            logits += out["start_logits"][window] + out["end_logits"][window]
    em = sum(normalize_answer(p) == normalize_answer(e[3]) for p, e in zip(predictions, examples)) / len(examples)
    f1 = sum(f1_score(p, e[3]) for p, e in zip(predictions, examples)) / len(examples)
    entry = {"architecture": architecture, "mode": mode, "exact_match": round(em, 4), "f1": round(f1, 4)}
    if float_run is not None:
        agreement = sum(a == b for a, b in zip(predictions, float_run[0])) / len(examples)
        entry["agreement_with_float"] = round(agreement, 4)
        if len(logits) != len(float_run[1]):
            sys.exit("%s and its float model split the demo questions into different windows." % name)
        entry["logits_sqnr_db"] = round(logits_sqnr_db(float_run[1], logits), 2)
    log("%s: %s" % (name, entry))
    return predictions, logits, entry


def measure_fill_mask(cli, name, mode, mask_sentences):
    directory = os.path.join(DEMO, name)
    hits = top1 = 0
    for item in mask_sentences:
        out = run_cli(cli, ["fill-mask", directory, "--text", item["text"], "--top-k", "5", "--mode", mode, "--json"])
        words = [p["token"].strip() for p in out["masks"][0]]
        hits += item["answer"] in words
        top1 += bool(words) and words[0] == item["answer"]
    entry = {"architecture": "RobertaForMaskedLM", "mode": mode,
             "fill_mask_top5": round(hits / len(mask_sentences), 4),
             "fill_mask_top1": round(top1 / len(mask_sentences), 4)}
    log("%s: %s" % (name, entry))
    return entry


def command_measure(args):
    """Measures the family's checkpoints and records them in expectations.json, keeping the
    entries of the checkpoints not measured now."""
    passages, examples = passages_and_examples()
    mask_sentences = load_mask_sentences()
    path = os.path.join(DEMO, "expectations.json")
    checkpoints = {}
    if os.path.exists(path):
        with open(path) as f:
            checkpoints = json.load(f).get("checkpoints", {})
    results = {"note": "Measured with scalescope-cli (qa --json, fill-mask --json) on corpus/questions.json and "
                       "corpus/mask_sentences.json by resources/demo/tools/train_demo.py measure.",
               "questions": len(examples), "mask_sentences": len(mask_sentences), "checkpoints": checkpoints}
    if args.family in ("roberta", "all"):
        answers, logits, checkpoints["qa-float"] = measure_qa(args.cli, "qa-float", "RobertaForQuestionAnswering",
                                                              "dequant", examples)
        for name in ("qa-fp8", "qa-fp8-static", "qa-fp8-defect"):
            checkpoints[name] = measure_qa(args.cli, name, "RobertaForQuestionAnswering", "fp8", examples,
                                           (answers, logits))[2]
        checkpoints["mlm-float"] = measure_fill_mask(args.cli, "mlm-float", "dequant", mask_sentences)
        checkpoints["mlm-fp8"] = measure_fill_mask(args.cli, "mlm-fp8", "fp8", mask_sentences)
    if args.family == "defect":
        float_run = measure_qa(args.cli, "qa-float", "RobertaForQuestionAnswering", "dequant", examples)
        checkpoints["qa-fp8-defect"] = measure_qa(args.cli, "qa-fp8-defect", "RobertaForQuestionAnswering", "fp8",
                                                  examples, float_run[:2])[2]
    if args.family in ("bert", "all"):
        answers, logits, checkpoints["bert-qa-float"] = measure_qa(args.cli, "bert-qa-float", "BertForQuestionAnswering",
                                                                   "dequant", examples)
        checkpoints["bert-qa-fp8"] = measure_qa(args.cli, "bert-qa-fp8", "BertForQuestionAnswering", "fp8", examples,
                                                (answers, logits))[2]
    temporary = path + ".tmp"
    with open(temporary, "w") as f:
        json.dump(results, f, indent=2)
        f.write("\n")
    os.replace(temporary, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    train = commands.add_parser("train")
    train.add_argument("--mlm-steps", type=int, default=4000)
    train.add_argument("--qa-epochs", type=int, default=40)
    train.add_argument("--bpe-only", action="store_true", help="only learn and save the vocabulary")
    train.set_defaults(run=command_train)
    train_bert = commands.add_parser("train-bert")
    # Fewer steps than RoBERTa's: the shipped bert-qa-float was trained with these on a shared
    # machine (the MLM is not shipped; it only has to give the QA fine-tuning a start).
    train_bert.add_argument("--mlm-steps", type=int, default=1200)
    train_bert.add_argument("--qa-epochs", type=int, default=30)
    train_bert.add_argument("--output", default=os.path.join(DEMO, "bert-qa-float"),
                            help="where to save the BertForQuestionAnswering (default: resources/demo/bert-qa-float)")
    train_bert.set_defaults(run=command_train_bert)
    verify = commands.add_parser("verify-tokenizer")
    verify.add_argument("cli")
    verify.add_argument("--family", choices=("roberta", "bert", "all"), default="all")
    verify.set_defaults(run=command_verify_tokenizer)
    measure = commands.add_parser("measure")
    measure.add_argument("cli")
    measure.add_argument("--family", choices=("roberta", "bert", "defect", "all"), default="all")
    measure.set_defaults(run=command_measure)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
