#!/usr/bin/env python3
"""Writes the fuzzers' seed corpora (fuzz/corpus/<target>/) and dictionaries (fuzz/dicts/).

Seeds are small valid inputs plus a few near-misses; libFuzzer mutates from there. The input layouts
(mode byte, separator between files) are those of fuzz/fuzz_entry_points.h. Run it again after
changing a layout: python3 fuzz/make_corpus.py
"""
import base64
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
SEP = b"\n@@next-file@@\n"


def write(target, name, data):
    folder = os.path.join(HERE, "corpus", target)
    os.makedirs(folder, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def safetensors(tensors, metadata=None, pad=True):
    """tensors: list of (name, dtype, shape, bytes)."""
    header = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    offset = 0
    payload = b""
    for name, dtype, shape, data in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        payload += data
    text = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + payload


def f32(*values):
    return struct.pack("<%df" % len(values), *values)


def safetensors_seeds():
    small = [
        ("w", "F32", [2, 3], f32(1, -2, 3.5, 0, 1e-3, -7)),
        ("q", "F8_E4M3", [4], bytes([0x38, 0xB8, 0x7E, 0x7F])),
        ("e", "F8_E5M2", [2], bytes([0x3C, 0x7C])),
        ("h", "F16", [2], struct.pack("<2H", 0x3C00, 0xC000)),
        ("b", "BF16", [1, 2], struct.pack("<2H", 0x3F80, 0x7F80)),
        ("i", "I64", [2], struct.pack("<2q", -1, 2**40)),
        ("n", "I32", [1], struct.pack("<i", 7)),
        ("s", "I16", [1], struct.pack("<h", -3)),
        ("u", "U8", [2], bytes([0, 255])),
        ("c", "I8", [2], bytes([0x80, 0x7F])),
        ("t", "BOOL", [2], bytes([0, 1])),
        ("d", "F64", [1], struct.pack("<d", 2.5)),
        ("z", "F32", [0, 4], b""),
    ]
    write("safetensors", "single_all_dtypes", b"\x00" + safetensors(small, {"format": "pt"}))
    write("safetensors", "single_one_tensor", b"\x00" + safetensors([("x", "F32", [1], f32(1))]))
    write("safetensors", "single_empty", b"\x00" + safetensors([]))
    write("safetensors", "single_unpadded", b"\x00" + safetensors([("a.weight", "F32", [2], f32(1, 2))], pad=False))
    header = b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}}'
    overlapping = b"\x00" + struct.pack("<Q", len(header)) + header + b"\x00" * 8
    write("safetensors", "single_overlap", overlapping)
    write("safetensors", "single_truncated", (b"\x00" + safetensors([("x", "F32", [4], f32(1, 2, 3, 4))]))[:-5])
    write("safetensors", "single_huge_length", b"\x00" + struct.pack("<Q", 2**63) + b"{}")

    shard1 = safetensors([("encoder.weight", "F32", [2, 2], f32(1, 2, 3, 4)),
                          ("encoder.weight_scale", "BF16", [2, 1], struct.pack("<2H", 0x3F80, 0x4000))])
    shard2 = safetensors([("head.weight", "F8_E4M3", [3], bytes([1, 2, 3]))])
    index = json.dumps({"metadata": {"total_size": 23}, "weight_map": {
        "encoder.weight": "model-00001.safetensors",
        "encoder.weight_scale": "model-00001.safetensors",
        "head.weight": "model-00002.safetensors"}}).encode()
    write("safetensors", "sharded_two", b"\x01" + index + SEP + shard1 + SEP + shard2)
    bad_index = json.dumps({"weight_map": {"x": "../model-00001.safetensors"}}).encode()
    write("safetensors", "sharded_escape", b"\x01" + bad_index + SEP + shard1)
    missing = json.dumps({"weight_map": {"nope": "model-00001.safetensors"}}).encode()
    write("safetensors", "sharded_missing_tensor", b"\x01" + missing + SEP + shard1)
    deep = b'{"__metadata__":' + b"[" * 200 + b"]" * 200 + b"}"
    write("safetensors", "single_deep_header", struct.pack("<Q", len(deep)) + deep)


QUANT = {
    "quant_method": "compressed-tensors", "format": "float-quantized", "quantization_status": "compressed",
    "config_groups": {"group_0": {
        "targets": ["Linear"],
        "weights": {"num_bits": 8, "type": "float", "strategy": "channel", "symmetric": True, "dynamic": False},
        "input_activations": {"num_bits": 8, "type": "float", "strategy": "token", "symmetric": True,
                              "dynamic": True},
        "output_activations": None}},
    "ignore": ["lm_head"], "kv_cache_scheme": None}


def model_config(architecture="RobertaForQuestionAnswering", quantization=QUANT):
    config = {"architectures": [architecture], "vocab_size": 50265, "hidden_size": 768,
              "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072,
              "max_position_embeddings": 514, "type_vocab_size": 1, "layer_norm_eps": 1e-5,
              "pad_token_id": 1, "hidden_act": "gelu", "torch_dtype": "bfloat16", "model_type": "roberta"}
    if quantization is not None:
        config["quantization_config"] = quantization
    return json.dumps(config, indent=1)


def config_seeds():
    write("config", "qa_fp8_channel_token", model_config())
    write("config", "mlm_float", model_config("RobertaForMaskedLM", None))
    many = json.loads(json.dumps(QUANT))
    many["config_groups"] = {
        "group_0": {"targets": ["re:.*attention\\.self\\.(query|key|value)$"], "format": "float-quantized",
                    "weights": {"num_bits": 8, "type": "float", "strategy": "tensor", "symmetric": True,
                                "dynamic": False},
                    "input_activations": {"num_bits": 8, "type": "float", "strategy": "tensor",
                                          "symmetric": True, "dynamic": False}},
        "group_1": {"targets": ["Linear"],
                    "weights": {"num_bits": 8, "type": "float", "strategy": "block", "symmetric": True,
                                "dynamic": False, "block_structure": [128, 128]},
                    "input_activations": {"num_bits": 8, "type": "float", "strategy": "group",
                                          "group_size": 128, "dynamic": "local"}},
        "group_10": {"targets": "qa_outputs", "format": "int-quantized",
                     "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 32,
                                 "symmetric": False, "actorder": "static", "observer": "minmax"}}}
    many["ignore"] = ["re:lm_head.*", "roberta.encoder.layer.0.output.dense"]
    many["sparsity_config"] = {}
    many["version"] = "0.9.1"
    many["global_compression_ratio"] = 1.8
    write("config", "groups_regex_ignore", model_config(quantization=many))
    write("config", "quant_fp8_block", json.dumps({"quant_method": "fp8", "activation_scheme": "dynamic",
                                                    "weight_block_size": [128, 128],
                                                    "modules_to_not_convert": ["lm_head"]}))
    write("config", "bad_heads", model_config().replace('"num_attention_heads": 12', '"num_attention_heads": 7'))
    write("config", "huge_sizes", model_config().replace('"vocab_size": 50265', '"vocab_size": 18446744073709551615'))
    # Nesting past the parsers' depth limit (128) in the config and in a "re:" pattern past the
    # pattern limit (16 groups): the mutator grows either toward the 100,000 levels that once
    # overflowed the stack.
    write("config", "deep_nesting", model_config().replace('"hidden_act": "gelu"',
                                                           '"hidden_act": ' + "[" * 200 + "]" * 200))
    deep = json.loads(json.dumps(QUANT))
    deep["ignore"] = ["re:" + "(" * 40 + "a" + ")" * 40, "re:(a{100}){100}"]
    write("config", "deep_pattern", model_config(quantization=deep))


def byte_symbols():
    shifted = 256
    out = []
    for b in range(256):
        printable = (33 <= b <= 126) or (0xA1 <= b <= 0xAC) or b >= 0xAE
        out.append(chr(b) if printable else chr(shifted))
        if not printable:
            shifted += 1
    return out


def tiny_vocab():
    symbols = byte_symbols()
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for s in symbols:
        vocab.setdefault(s, len(vocab))
    sp = symbols[32]
    merges = [(sp, "t"), ("h", "e"), (sp + "t", "he"), ("i", "n"), (sp, "w"), ("o", "r"), (sp + "w", "or")]
    for left, right in merges:
        vocab.setdefault(left + right, len(vocab))
    vocab["<mask>"] = len(vocab)
    return vocab, merges


def tokenizer_files_seeds():
    vocab, merges = tiny_vocab()
    merges_txt = "#version: 0.2\n" + "".join("%s %s\n" % m for m in merges)
    text = "the world <mask> in  the\twor\u00e9ld 123 I'll"
    write("tokenizer_files", "vocab_merges",
          b"\x00" + json.dumps(vocab).encode() + SEP + merges_txt.encode() + SEP + text.encode())
    small = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "<mask>": 4, "h": 5, "i": 6, "hi": 7}
    write("tokenizer_files", "vocab_missing_bytes",
          b"\x00" + json.dumps(small).encode() + SEP + b"h i\r\nh  i\n" + SEP + b"hi hi \xff")
    tok = {"version": "1.0", "truncation": None, "padding": None,
           "added_tokens": [{"id": 4, "content": "<mask>", "single_word": False, "lstrip": True,
                             "rstrip": False, "normalized": False, "special": True},
                            {"id": 300, "content": "\u00e9t\u00e9", "special": False}],
           "normalizer": None,
           "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
               {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True}]},
           "post_processor": {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0]},
           "decoder": {"type": "ByteLevel"},
           "model": {"type": "BPE", "dropout": None, "unk_token": None,
                     "vocab": {k: v for k, v in vocab.items() if k != "<mask>"},
                     "merges": ["%s %s" % m for m in merges[:4]] + [list(m) for m in merges[4:]]}}
    write("tokenizer_files", "tokenizer_json", b"\x01" + json.dumps(tok).encode() + SEP + text.encode())
    tok["model"]["type"] = "WordPiece"
    write("tokenizer_files", "tokenizer_json_wordpiece", b"\x01" + json.dumps(tok).encode())
    write("tokenizer_files", "vocab_deep_nesting",
          b"\x00" + b'{"<s>": ' + b"[" * 200 + b"]" * 200 + b"}" + SEP + merges_txt.encode())


def wordpiece_files_seeds():
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "!", "un", "##aff", "##able",
             "a", "##b", "cafe", "\u65e5", "##s"]
    vocab_txt = "".join(token + "\n" for token in vocab)
    text = "Hello, world! unaffable Caf\u00e9 \u65e5\u672c [MASK]x\u0000\t" + "a" * 101
    write("wordpiece_files", "vocab_txt",
          b"\x00" + vocab_txt.encode() + SEP + b'{"do_lower_case": true}' + SEP + text.encode())
    write("wordpiece_files", "vocab_txt_cased_crlf",
          b"\x00" + vocab_txt.replace("\n", "\r\n").encode() + SEP +
          b'{"do_lower_case": false, "strip_accents": true, "tokenize_chinese_chars": false}' + SEP + text.encode())
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, t in enumerate(vocab[:5])]
    tok = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
           "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                          "strip_accents": None, "lowercase": True},
           "pre_tokenizer": {"type": "BertPreTokenizer"},
           "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]},
           "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
           "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                     "max_input_chars_per_word": 100, "vocab": {t: i for i, t in enumerate(vocab)}}}
    write("wordpiece_files", "tokenizer_json", b"\x01" + json.dumps(tok).encode() + SEP + text.encode())


def protobuf_varint(value):
    out = b""
    while True:
        out += bytes([(value & 0x7F) | (0x80 if value >= 0x80 else 0)])
        value >>= 7
        if value == 0:
            return out


def protobuf_bytes(number, content):
    return protobuf_varint(number << 3 | 2) + protobuf_varint(len(content)) + content


def sentencepiece_model(pieces, charsmap=b""):
    """A ModelProto: pieces (text, score, type), TrainerSpec model_type 1 and unk_id 0, and a
    NormalizerSpec holding charsmap."""
    out = b""
    for text, score, kind in pieces:
        out += protobuf_bytes(1, protobuf_bytes(1, text.encode()) + protobuf_varint(2 << 3 | 5) +
                              struct.pack("<f", score) + protobuf_varint(3 << 3) + protobuf_varint(kind))
    out += protobuf_bytes(2, protobuf_varint(3 << 3) + protobuf_varint(1) + protobuf_varint(40 << 3) +
                          protobuf_varint(0))
    if charsmap:
        out += protobuf_bytes(3, protobuf_bytes(2, charsmap))
    return out


def ascii_charsmap(rules):
    """SentencePiece's precompiled_charsmap for one-byte keys: a darts-clone double array (root
    offset 1, each key's node at 1 ^ key with its leaf 256 further) and the NUL-terminated strings."""
    units = [0] * 512
    units[0] = 1 << 10
    strings = b""
    for key, value in rules:
        position = 1 ^ key
        units[position] = key | (1 << 8) | (256 << 10)
        units[position ^ 256] = (1 << 31) | len(strings)
        strings += value + b"\0"
    trie = b"".join(struct.pack("<I", unit) for unit in units)
    return struct.pack("<I", len(trie)) + trie + strings


def unigram_files_seeds():
    pieces = [("<unk>", 0.0, 2), ("<s>", 0.0, 3), ("</s>", 0.0, 3), ("\u2581", -1.0, 1), ("a", -2.0, 1),
              ("b", -2.5, 1), ("\u2581a", -1.5, 1), ("ab", -2.2, 1), ("\u00e9", -3.0, 1), ("fi", -3.5, 1)]
    charsmap = ascii_charsmap([(ord("\t"), b" "), (ord("A"), b"a"), (ord("x"), b""), (ord("F"), b"fi")])
    text = "Ab\tab  xFa <mask> \u00e9e\u0301 \r\n<s></s>  "
    write("unigram_files", "model", b"\x00" + sentencepiece_model(pieces, charsmap) + SEP + text.encode())
    write("unigram_files", "model_no_charsmap", b"\x00" + sentencepiece_model(pieces))
    vocab = [["<s>", 0.0], ["<pad>", 0.0], ["</s>", 0.0], ["<unk>", 0.0]]
    vocab += [[p, score] for p, score, _ in pieces[3:]] + [["<mask>", 0.0]]
    added = [{"id": i, "content": t, "single_word": False, "lstrip": t == "<mask>", "rstrip": False,
              "normalized": False, "special": True}
             for i, t in [(0, "<s>"), (1, "<pad>"), (2, "</s>"), (3, "<unk>"), (len(vocab) - 1, "<mask>")]]
    special = lambda name: {"SpecialToken": {"id": name, "type_id": 0}}
    sequence = lambda name: {"Sequence": {"id": name, "type_id": 0}}
    post = {"type": "TemplateProcessing", "single": [special("<s>"), sequence("A"), special("</s>")],
            "pair": [special("<s>"), sequence("A"), special("</s>"), special("</s>"), sequence("B"),
                     special("</s>")],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]},
                               "</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}}}
    precompiled = {"type": "Precompiled", "precompiled_charsmap": base64.b64encode(charsmap).decode()}
    current = {"version": "1.0", "added_tokens": added,
               "normalizer": {"type": "Sequence", "normalizers": [
                   precompiled, {"type": "Strip", "strip_left": False, "strip_right": True},
                   {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": "\u2581"}]},
               "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always",
                                 "split": True},
               "post_processor": post,
               "model": {"type": "Unigram", "unk_id": 3, "vocab": vocab, "byte_fallback": False}}
    write("unigram_files", "tokenizer_json", b"\x01" + json.dumps(current).encode() + SEP + text.encode())
    legacy = dict(current)
    legacy["normalizer"] = {"type": "Sequence", "normalizers": [
        precompiled, {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]}
    legacy["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581", "add_prefix_space": True}
    write("unigram_files", "tokenizer_json_legacy", b"\x01" + json.dumps(legacy).encode() + SEP + text.encode())


def tokenizer_encode_seeds():
    texts = [
        b"\x00Hello world! The quick brown fox.",
        b"\x00The capital of France is <mask>.",
        b"\x01  leading spaces, trailing   \n\n tabs\t\tend ",
        b"\x02Who wrote it?Shakespeare wrote Hamlet in 1600.",
        "\x00na\u00efve caf\u00e9 \u6771\u4eac \U0001F642 \u0645\u0631\u062d\u0628\u0627 ".encode(),
        b"\x01I'll we've don't they're 'S 'd",
        b"\x00\xff\xfe invalid \xc3 utf-8 \xed\xa0\x80 \xf4\x90\x80\x80",
        b"\x00<mask><mask> <mask>a<mask",
        b"\x02 1234567890 3.14159 -42",
        b"\x00" + b"a" * 300,
    ]
    for i, text in enumerate(texts):
        write("tokenizer_encode", "text_%02d" % i, text)


def squad_seeds():
    v1 = {"version": "1.1", "data": [{"title": "Normans", "paragraphs": [{
        "context": "The Normans were the people who in the 10th and 11th centuries gave their name to Normandy.",
        "qas": [{"id": "q1", "question": "In what country is Normandy located?",
                 "answers": [{"text": "France", "answer_start": 0}, {"text": "France", "answer_start": 0}]},
                {"id": 2, "question": "When?", "answers": [{"text": "10th and 11th centuries",
                                                           "answer_start": 42}]}]}]}]}
    write("squad", "v1", json.dumps(v1, indent=1))
    v2 = {"version": "v2.0", "data": [{"title": "T", "paragraphs": [{
        "context": "Some context.",
        "qas": [{"id": "a", "question": "Unanswerable?", "answers": [], "is_impossible": True,
                 "plausible_answers": [{"text": "Some", "answer_start": 0}]},
                {"id": "b", "question": "What?", "answers": [{"text": "context", "answer_start": 5}],
                 "is_impossible": False}]}]}]}
    write("squad", "v2", json.dumps(v2))
    write("squad", "syntax_error", '{"version": "1.1", "data": [{"title": "x", "paragraphs": [}]}')
    write("squad", "duplicate_id", json.dumps({"data": [{"paragraphs": [{"context": "c", "qas": [
        {"id": "x", "question": "q", "answers": [{"text": "c"}]},
        {"id": "x", "question": "q", "answers": [{"text": "c"}]}]}]}]}))
    write("squad", "deep", "[" * 40 + "]" * 40)


def runner_request_seeds():
    """What a client writes to the runner's stdin: request lines, each followed by its payload."""
    def line(obj):
        return json.dumps(obj, separators=(",", ":")).encode() + b"\n"

    h = "0123456789abcdef" * 4
    hello2 = line({"id": 1, "op": "hello", "protocols": [1, 2]})
    write("runner_request", "session_v1",
          line({"id": 1, "op": "hello"})
          + line({"id": 2, "op": "load", "checkpoint": "/tmp/ckpt", "mode": "fp8"})
          + line({"id": 3, "op": "forward", "input_ids": [[0, 31414, 232, 2]], "attention_mask": [[1, 1, 1, 1]],
                  "capture": ["roberta.encoder.layer.0.output"], "output": "/tmp/out.safetensors"})
          + line({"id": 4, "op": "shutdown"}))
    write("runner_request", "session_v2_upload",
          hello2
          + line({"id": 2, "op": "has_checkpoint", "hash": h})
          + line({"id": 3, "op": "upload", "hash": h, "name": "config.json", "sha256": h, "bytes": 2}) + b"{}"
          + line({"id": 4, "op": "commit_checkpoint", "hash": h,
                  "files": [{"name": "config.json", "size": 2, "sha256": h}]})
          + line({"id": 5, "op": "load", "hash": h, "mode": "dequant"}))
    write("runner_request", "forward_v2_everything",
          hello2
          + line({"id": 2, "op": "forward", "input_ids": [[0, 5, 2], [0, 6, 7, 2]], "attention_mask": [[1, 1, 1], [1, 1, 1, 1]],
                  "token_type_ids": [[0, 0, 0], [0, 0, 1, 1]], "logit_positions": [[0, 1], [1, 2]],
                  "overrides": {"roberta.encoder.layer.0.attention.self.query": "float", "*": "fp8"},
                  "capture": "all"}))
    write("runner_request", "logit_position_beyond_32_bits",
          line({"id": 1, "op": "forward", "input_ids": [[0, 5, 2]], "logit_positions": [[0, 4294967297]],
                "output": "o.safetensors"}))
    write("runner_request", "integer_beyond_64_bits",
          b'{"id":1,"op":"forward","input_ids":[[0,18446744073709551616]],"output":"o"}\n')
    write("runner_request", "bytes_not_a_count",
          line({"id": 1, "op": "load", "checkpoint": "c", "bytes": -1}) + b"never read\n")
    write("runner_request", "payload_on_a_forward",
          hello2 + line({"id": 2, "op": "forward", "input_ids": [[1]], "bytes": 5}) + b"{}\n{}"
          + line({"id": 3, "op": "shutdown"}))
    write("runner_request", "not_an_object", b'[1,2,3]\n"op"\n  \n{"id":2,"op":"hello"}\r\n')
    write("runner_request", "not_json", b'{"id":1,"op":\n{"id":2,"op":"hello"}\n')
    write("runner_request", "deep", b"[" * 70 + b"]" * 70 + b"\n")
    write("runner_request", "long_line", b'{"id":1,"op":"hello","pad":"' + b"x" * 1100 + b'"}\n')
    write("runner_request", "payload_cut_short",
          hello2 + line({"id": 2, "op": "upload", "hash": h, "name": "model.safetensors", "sha256": h,
                         "bytes": 1000}) + b"short")


DICTS = {
    "json_common": ['"{"', '"}"', '"["', '"]"', '":"', '","', '"\\""', '"true"', '"false"', '"null"',
                    '"-1"', '"0"', '"1e400"', '"18446744073709551615"', '"9223372036854775807"',
                    '"\\\\u0000"', '"\\\\ud800"', '"[[[[[[[[[[[[[[[["', '"]]]]]]]]]]]]]]]]"',
                    '"{\\"a\\":{\\"a\\":{\\"a\\":{\\"a\\":"', '"((((((((((((((((("'],
    "safetensors": ['"dtype"', '"shape"', '"data_offsets"', '"__metadata__"', '"weight_map"', '"metadata"',
                    '"F8_E4M3"', '"F8_E5M2"', '"BF16"', '"F16"', '"F32"', '"F64"', '"I64"', '"BOOL"',
                    '"model-00001.safetensors"', '"model-00002.safetensors"', '"model-00003.safetensors"',
                    '"\\x0a@@next-file@@\\x0a"'],
    "config": ['"architectures"', '"RobertaForQuestionAnswering"', '"RobertaForMaskedLM"', '"vocab_size"',
               '"hidden_size"', '"num_hidden_layers"', '"num_attention_heads"', '"intermediate_size"',
               '"max_position_embeddings"', '"type_vocab_size"', '"layer_norm_eps"', '"pad_token_id"',
               '"hidden_act"', '"gelu"', '"torch_dtype"', '"quantization_config"', '"quant_method"',
               '"compressed-tensors"', '"fp8"', '"format"', '"float-quantized"', '"int-quantized"',
               '"naive-quantized"', '"config_groups"', '"group_0"', '"group_1"', '"targets"', '"Linear"',
               '"weights"', '"input_activations"', '"output_activations"', '"num_bits"', '"type"', '"float"',
               '"int"', '"strategy"', '"channel"', '"tensor"', '"token"', '"group"', '"block"', '"symmetric"',
               '"dynamic"', '"local"', '"group_size"', '"block_structure"', '"ignore"', '"re:"', '"re:.*"',
               '"weight_block_size"', '"modules_to_not_convert"', '"(a|b)*"', '"\\\\"'],
    "tokenizer_files": ['"<s>"', '"</s>"', '"<pad>"', '"<unk>"', '"<mask>"', '"model"', '"vocab"', '"merges"',
                        '"type"', '"BPE"', '"ByteLevel"', '"pre_tokenizer"', '"added_tokens"', '"content"',
                        '"id"', '"special"', '"#version: 0.2"', '"\\xc4\\xa0"', '"\\x0a@@next-file@@\\x0a"'],
    "wordpiece_files": ['"[CLS]"', '"[SEP]"', '"[PAD]"', '"[UNK]"', '"[MASK]"', '"##"', '"model"', '"vocab"',
                        '"WordPiece"', '"BertNormalizer"', '"BertPreTokenizer"', '"added_tokens"', '"content"',
                        '"do_lower_case"', '"strip_accents"', '"tokenize_chinese_chars"', '"lowercase"',
                        '"max_input_chars_per_word"', '"\\xcc\\x81"', '"\\xe6\\x97\\xa5"',
                        '"\\x0a@@next-file@@\\x0a"'],
    "unigram_files": ['"<s>"', '"</s>"', '"<pad>"', '"<unk>"', '"<mask>"', '"model"', '"vocab"', '"unk_id"',
                      '"Unigram"', '"Precompiled"', '"precompiled_charsmap"', '"Strip"', '"Replace"',
                      '"Metaspace"', '"prepend_scheme"', '"add_prefix_space"', '"TemplateProcessing"',
                      '"\\xe2\\x96\\x81"', '"\\xcc\\x81"', '"\\x0d\\x0a"', '"\\x0a@@next-file@@\\x0a"'],
    "tokenizer_encode": ['"<mask>"', '"\'s"', '"\'ll"', '"\'re"', '"\'ve"', '" "', '"\\x0a"', '"\\xc3\\xa9"',
                         '"\\xe6\\x9d\\xb1"', '"\\xf0\\x9f\\x99\\x82"', '"\\xe2\\x80\\xaf"', '"\\xcc\\x81"'],
    "squad": ['"version"', '"data"', '"title"', '"paragraphs"', '"context"', '"qas"', '"id"', '"question"',
              '"answers"', '"text"', '"answer_start"', '"is_impossible"', '"plausible_answers"', '"v2.0"',
              '"1.1"'],
    "runner_request": ['"op"', '"hello"', '"protocols"', '"load"', '"checkpoint"', '"mode"', '"fp8"',
                       '"dequant"', '"fp16"', '"forward"', '"input_ids"', '"attention_mask"',
                       '"token_type_ids"', '"logit_positions"', '"overrides"', '"float"', '"capture"',
                       '"all"', '"output"', '"has_checkpoint"', '"upload"', '"commit_checkpoint"',
                       '"shutdown"', '"hash"', '"name"', '"sha256"', '"bytes"', '"files"', '"size"',
                       '"\\x0a"', '"9223372036854775807"', '"18446744073709551616"', '"4294967297"',
                       '"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"'],
    "thresholds": ['"format"', '"scalescope-thresholds"', '"version"', '"percentile"', '"provenance"', '"points"',
                   '"point"', '"samples"', '"thresholds"', '"sqnr_db"', '"cosine"', '"max_abs"',
                   '"cross_entropy"', '"mean_probability_difference"', '"inf"', '"-inf"', '"qa_logits"'],
    "task_datasets": ['"text"', '"pair"', '"label"', '"sentence1"', '"sentence2"', '"score"', '"_id"',
                      '"title"', '"query-id"', '"corpus-id"', '"\\x09"', '"\\x0a"', '"neg"', '"pos"',
                      '"\\xef\\xbb\\xbf"', '"\\xc2\\xa0"', '"\\x0a@@next-file@@\\x0a"'],
}


def thresholds_seeds():
    points = [{"point": "roberta.embeddings.output", "samples": 50,
               "thresholds": {"cosine": 0.99999989, "max_abs": 0.0046, "sqnr_db": 66.6}},
              {"point": "qa_logits", "samples": 50,
               "thresholds": {"cosine": 0.99999995, "cross_entropy": 3.2e-06, "max_abs": 0.0218,
                              "mean_probability_difference": 8e-06, "sqnr_db": "inf"}}]
    document = {"format": "scalescope-thresholds", "version": 1, "percentile": 99.0,
                "provenance": {"runs": "reference,reference-fp16", "inputs_count": "50"}, "points": points}
    write("thresholds", "noise_floor", json.dumps(document, indent=2))
    write("thresholds", "minus_infinity_and_no_samples",
          json.dumps({"format": "scalescope-thresholds", "version": 1, "percentile": 1,
                      "points": [{"point": "x", "thresholds": {"sqnr_db": "-inf"}}]}))
    write("thresholds", "wrong_version", json.dumps({"format": "scalescope-thresholds", "version": 2}))
    write("thresholds", "negative_samples",
          json.dumps({"format": "scalescope-thresholds", "version": 1, "percentile": 99,
                      "points": [{"point": "x", "samples": -3, "thresholds": {}}]}))


def task_datasets_seeds():
    """First byte: 0 texts, 1 STS, 2 classification, 3 BEIR; second byte: maxSamples (low bits)."""
    def seed(name, kind, max_samples, payload):
        if isinstance(payload, str):
            payload = payload.encode("utf-8")
        write("task_datasets", name, bytes([kind, max_samples]) + payload)

    seed("texts_lines", 0, 0, "\ufefffirst text\r\n\n  \nsecond text\n")
    seed("texts_jsonl", 0, 1, '{"text": "caf\\u00e9"}\n{"text": ""}\n')
    seed("texts_mixed", 0, 0, 'plain\n{"text": "json"}\n')
    seed("sts_tsv", 1, 0, "split\tscore\tsentence1\tsentence2\ntest\t4.5\tA man.\tA person.\ntest\t0\tx\ty\n")
    seed("sts_jsonl", 1, 2, '{"sentence1": "a", "sentence2": "b", "score": 3.8}\n'
                            '{"sentence1": "c", "sentence2": "d", "score": 1}\n')
    seed("sts_bad_score", 1, 0, "sentence1\tsentence2\tscore\na\tb\thigh\n")
    seed("classification", 2, 0, '{"text": "good", "label": 1}\n{"text": "q", "pair": "p", "label": "neg"}\n')
    seed("classification_unlabelled", 2, 1, '{"text": "a"}\n{"text": "b", "pair": null}\n')
    seed("classification_unknown_name", 2, 0, '{"text": "a", "label": "neutral"}\n')
    corpus = ('{"_id": "d1", "title": "Paris", "text": "capital of France"}\n'
              '{"_id": "d2", "title": "", "text": " other "}\n{"_id": 3, "text": "x", "title": null}\n')
    queries = '{"_id": "q1", "text": "where is Paris"}\n{"_id": "q2", "text": "unjudged"}\n'
    qrels = "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\t3\t0\nq1\tgone\t1\n"
    seed("beir", 3, 0, corpus.encode() + SEP + queries.encode() + SEP + qrels.encode())
    seed("beir_unknown_query", 3, 1, corpus.encode() + SEP + queries.encode() + SEP + (qrels + "q9\td1\t1\n").encode())
    seed("beir_no_qrels", 3, 0, corpus.encode() + SEP + queries.encode())


def write_dicts():
    folder = os.path.join(HERE, "dicts")
    os.makedirs(folder, exist_ok=True)
    for target, tokens in DICTS.items():
        if target == "json_common":
            continue
        extra = DICTS["json_common"] if target != "tokenizer_encode" else []
        with open(os.path.join(folder, target + ".dict"), "w") as f:
            f.write("# libFuzzer dictionary for fuzz_%s (written by fuzz/make_corpus.py)\n" % target)
            for token in tokens + extra:
                f.write(token + "\n")


if __name__ == "__main__":
    safetensors_seeds()
    config_seeds()
    tokenizer_files_seeds()
    tokenizer_encode_seeds()
    wordpiece_files_seeds()
    unigram_files_seeds()
    squad_seeds()
    runner_request_seeds()
    thresholds_seeds()
    task_datasets_seeds()
    write_dicts()
