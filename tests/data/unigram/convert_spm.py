#!/usr/bin/env python3
"""Writes the two tokenizer.json layouts that Hugging Face's converter has produced for an
XLM-RoBERTa SentencePiece model, from the .model file alone (no transformers, no protobuf package:
the ModelProto is read by hand, as the C++ reader does).

  current: Sequence[Precompiled, Strip(right), Replace(" {2,}" -> "▁")],
           Metaspace {prepend_scheme: "always", split: true}
  legacy:  Sequence[Precompiled, Replace(" {2,}" -> " ")], Metaspace {add_prefix_space: true}

Both: Unigram with fairseq ids (<s> 0, <pad> 1, </s> 2, <unk> 3, piece i >= 3 at i + 1, <mask>
last), the five specials as added tokens (<mask> with lstrip), post-processor <s> A </s> and
<s> A </s></s> B </s> with type ids 0. Written from ScaleScope's DESIGN.md and checked by loading
the result into the npm tokenizers package (golden.mjs).

Usage: convert_spm.py MODEL CURRENT_JSON LEGACY_JSON
"""
import base64
import json
import struct
import sys


def read_varint(data, pos):
    value, shift = 0, 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def fields(data):
    """(field number, wire type, value) of one protobuf message; value is an int or bytes."""
    pos = 0
    while pos < len(data):
        key, pos = read_varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = read_varint(data, pos)
        elif wire == 1:
            value, pos = data[pos:pos + 8], pos + 8
        elif wire == 2:
            length, pos = read_varint(data, pos)
            value, pos = data[pos:pos + length], pos + length
        elif wire == 5:
            value, pos = data[pos:pos + 4], pos + 4
        else:
            raise ValueError("unsupported wire type %d" % wire)
        yield number, wire, value


def read_model(path):
    with open(path, "rb") as f:
        data = f.read()
    pieces, charsmap, unk_id = [], b"", 0
    for number, _, value in fields(data):
        if number == 1:  # SentencePiece: piece 1, score 2 (float), type 3
            piece, score, kind = "", 0.0, 1
            for n, _, v in fields(value):
                if n == 1:
                    piece = v.decode("utf-8")
                elif n == 2:
                    score = struct.unpack("<f", v)[0]
                elif n == 3:
                    kind = v
            pieces.append((piece, score, kind))
        elif number == 2:  # TrainerSpec: unk_id 40
            for n, _, v in fields(value):
                if n == 40:
                    unk_id = v
        elif number == 3:  # NormalizerSpec: precompiled_charsmap 2
            for n, _, v in fields(value):
                if n == 2:
                    charsmap = v
    return pieces, charsmap, unk_id


def added_token(token_id, content, lstrip=False):
    return {"id": token_id, "content": content, "single_word": False, "lstrip": lstrip,
            "rstrip": False, "normalized": False, "special": True}


def template():
    special = lambda name: {"SpecialToken": {"id": name, "type_id": 0}}
    sequence = lambda name: {"Sequence": {"id": name, "type_id": 0}}
    return {
        "type": "TemplateProcessing",
        "single": [special("<s>"), sequence("A"), special("</s>")],
        "pair": [special("<s>"), sequence("A"), special("</s>"), special("</s>"), sequence("B"),
                 special("</s>")],
        "special_tokens": {
            "<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]},
            "</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]},
        },
    }


def tokenizer_json(pieces, charsmap, legacy):
    # fairseq's dictionary puts <s> <pad> </s> <unk> first; SentencePiece's own first three
    # pieces (<unk> <s> </s>) are replaced by them.
    vocab = [["<s>", 0.0], ["<pad>", 0.0], ["</s>", 0.0], ["<unk>", 0.0]]
    vocab += [[piece, score] for piece, score, _ in pieces[3:]]
    vocab.append(["<mask>", 0.0])
    precompiled = {"type": "Precompiled",
                   "precompiled_charsmap": base64.b64encode(charsmap).decode("ascii")}
    if legacy:
        steps = [precompiled, {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]
        metaspace = {"type": "Metaspace", "replacement": "\u2581", "add_prefix_space": True}
    else:
        steps = [precompiled, {"type": "Strip", "strip_left": False, "strip_right": True},
                 {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": "\u2581"}]
        metaspace = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always",
                     "split": True}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [added_token(0, "<s>"), added_token(1, "<pad>"), added_token(2, "</s>"),
                         added_token(3, "<unk>"), added_token(len(vocab) - 1, "<mask>", True)],
        "normalizer": {"type": "Sequence", "normalizers": steps},
        "pre_tokenizer": metaspace,
        "post_processor": template(),
        "decoder": dict(metaspace),
        "model": {"type": "Unigram", "unk_id": 3, "vocab": vocab, "byte_fallback": False},
    }


def main():
    model, current, legacy = sys.argv[1:4]
    pieces, charsmap, unk_id = read_model(model)
    if unk_id != 0 or [p[2] for p in pieces[:3]] != [2, 3, 3]:
        sys.exit("%s: expected SentencePiece's default <unk> <s> </s> as pieces 0-2" % model)
    for path, is_legacy in ((current, False), (legacy, True)):
        with open(path, "w", encoding="utf-8") as f:
            json.dump(tokenizer_json(pieces, charsmap, is_legacy), f, ensure_ascii=False, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
