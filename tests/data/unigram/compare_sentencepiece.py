#!/usr/bin/env python3
"""Records where Python's sentencepiece (the library the model was trained with) tokenizes a text
differently from Hugging Face's fast tokenizer (golden.json, current layout). Hugging Face is the
contract; this only documents the differences. Ids are compared after fairseq's mapping (SentencePiece
<unk> 0 -> 3, piece i >= 3 -> i + 1); texts that write a special token (<mask>, <s>, ...) are kept
apart, since sentencepiece reads those as plain text by design.

Usage: compare_sentencepiece.py MODEL STRINGS_JSON GOLDEN_JSON OUT_JSON
"""
import json
import sys

import sentencepiece

SPECIALS = ("<s>", "</s>", "<pad>", "<unk>", "<mask>")


def piece_names(processor, ids):
    """The strings of fairseq ids."""
    fairseq = {0: "<s>", 1: "<pad>", 2: "</s>", 3: "<unk>", processor.get_piece_size() + 1: "<mask>"}
    return [fairseq[i] if i in fairseq else processor.id_to_piece(i - 1) for i in ids]


def main():
    model, strings_path, golden_path, out_path = sys.argv[1:5]
    processor = sentencepiece.SentencePieceProcessor(model_file=model)
    with open(strings_path, encoding="utf-8") as f:
        texts = json.load(f)["single"]
    with open(golden_path, encoding="utf-8") as f:
        golden = json.load(f)
    hf = golden["layouts"]["current"]["single"]
    differences, with_specials = [], 0
    for text, expected in zip(texts, hf):
        ids = [3 if i == 0 else i + 1 for i in processor.encode(text)]
        hf_ids = expected["ids"][1:-1]
        if ids == hf_ids:
            continue
        special = any(s in text for s in SPECIALS)
        with_specials += special
        differences.append({"text": text, "writes_special_token": special, "huggingface": hf_ids,
                            "sentencepiece": ids,
                            "huggingface_pieces": piece_names(processor, hf_ids),
                            "sentencepiece_pieces": piece_names(processor, ids)})
    summary = {"sentencepiece": sentencepiece.__version__, "tokenizers": golden["tokenizers"],
               "texts": len(texts), "differ": len(differences),
               "differ_without_special_tokens": len(differences) - with_specials,
               "differences": differences}
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(summary, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("%d of %d texts differ (%d without special tokens in the text)"
          % (len(differences), len(texts), len(differences) - with_specials))


if __name__ == "__main__":
    main()
