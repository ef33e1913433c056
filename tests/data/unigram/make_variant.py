#!/usr/bin/env python3
"""Writes tokenizer_variant.json: the current layout with the options XLM-R's own files do not use
but other tokenizer.json files may, so that the reader's handling of them is checked against Hugging
Face too: Metaspace prepend_scheme "first", a Replace with a String pattern, <mask> matched after
normalization (normalized: true) and taking the whitespace after it (rstrip), and a non-special
added token matched in the normalized text.

Usage: make_variant.py CURRENT_JSON OUT_JSON
"""
import json
import sys


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        tokenizer = json.load(f)
    tokenizer["pre_tokenizer"]["prepend_scheme"] = "first"
    tokenizer["decoder"]["prepend_scheme"] = "first"
    tokenizer["normalizer"]["normalizers"].append(
        {"type": "Replace", "pattern": {"String": "\u2581\u2581"}, "content": "\u2581"})
    tokenizer["normalizer"]["normalizers"].append({"type": "Replace", "pattern": {"String": "ß"}, "content": "ss"})
    mask = tokenizer["added_tokens"][-1]
    mask.update({"normalized": True, "rstrip": True})
    vocab = tokenizer["model"]["vocab"]
    tokenizer["added_tokens"].append({"id": len(vocab), "content": "ＮＥＷ", "single_word": False,
                                      "lstrip": False, "rstrip": False, "normalized": True, "special": False})
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(tokenizer, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
