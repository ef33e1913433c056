#!/usr/bin/env python3
"""The PyTorch eager peer of scalescope-bench: the same float32 RoBERTa-for-QA forward, written
with torch.nn.functional, on the same checkpoint, threads and sequence length. Development tool
(needs Debian's python3-torch); the product itself is C++."""
import argparse
import json
import os
import struct
import sys
import time

# --placement engine gives the GEMM threads to OpenBLAS and keeps PyTorch's OpenMP pool at one,
# as ScaleScope does; OpenBLAS reads its thread count when it loads, so before importing torch.
if "--placement" in sys.argv and sys.argv[sys.argv.index("--placement") + 1] == "engine":
    os.environ["OPENBLAS_NUM_THREADS"] = sys.argv[sys.argv.index("--threads") + 1] if "--threads" in sys.argv else "2"

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "I64": torch.int64}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    base = 8 + length
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        raw = bytearray(data[base + begin:base + end])
        tensor = torch.frombuffer(raw, dtype=DTYPES[entry["dtype"]]) if raw else torch.empty(0)
        tensors[name] = tensor.reshape(entry["shape"]).float()
    return tensors


def forward(w, config, ids):
    hidden = config["hidden_size"]
    heads = config["num_attention_heads"]
    eps = config["layer_norm_eps"]
    pad = config["pad_token_id"]
    mask = ids.ne(pad).long()
    positions = torch.cumsum(mask, 1) * mask + pad
    x = (F.embedding(ids, w["roberta.embeddings.word_embeddings.weight"])
         + F.embedding(positions, w["roberta.embeddings.position_embeddings.weight"])
         + w["roberta.embeddings.token_type_embeddings.weight"][0])
    x = F.layer_norm(x, (hidden,), w["roberta.embeddings.LayerNorm.weight"], w["roberta.embeddings.LayerNorm.bias"], eps)
    b, s, _ = x.shape
    d = hidden // heads
    for i in range(config["num_hidden_layers"]):
        p = f"roberta.encoder.layer.{i}."
        lin = lambda t, m: F.linear(t, w[p + m + ".weight"], w[p + m + ".bias"])
        q = lin(x, "attention.self.query").view(b, s, heads, d).transpose(1, 2)
        k = lin(x, "attention.self.key").view(b, s, heads, d).transpose(1, 2)
        v = lin(x, "attention.self.value").view(b, s, heads, d).transpose(1, 2)
        probs = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) / d ** 0.5, -1)
        ctx = torch.matmul(probs, v).transpose(1, 2).reshape(b, s, hidden)
        a = F.layer_norm(lin(ctx, "attention.output.dense") + x, (hidden,),
                         w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"], eps)
        h = F.gelu(lin(a, "intermediate.dense"))
        x = F.layer_norm(lin(h, "output.dense") + a, (hidden,), w[p + "output.LayerNorm.weight"],
                         w[p + "output.LayerNorm.bias"], eps)
    return F.linear(x, w["qa_outputs.weight"], w["qa_outputs.bias"])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--seq", type=int, default=384)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--output", required=True)
    parser.add_argument("--placement", choices=["torch", "engine"], default="torch",
                        help="torch: torch.set_num_threads(N) as PyTorch users do; engine: OpenBLAS N, OpenMP 1")
    args = parser.parse_args()
    torch.set_num_threads(1 if args.placement == "engine" else args.threads)
    with open(f"{args.checkpoint}/config.json") as f:
        config = json.load(f)
    weights = read_safetensors(f"{args.checkpoint}/model.safetensors")
    generator = torch.Generator().manual_seed(7)
    ids = torch.randint(4, 50004, (1, args.seq), generator=generator)
    ids[0, 0], ids[0, -1] = 0, 2
    with torch.inference_mode():
        forward(weights, config, ids)
        runs = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            forward(weights, config, ids)
            runs.append((time.perf_counter() - start) * 1e3)
    runs_sorted = sorted(runs)
    n = len(runs_sorted)
    median = runs_sorted[n // 2] if n % 2 else 0.5 * (runs_sorted[n // 2 - 1] + runs_sorted[n // 2])
    with open(args.output, "w") as f:
        json.dump({"median_ms": median, "min_ms": runs_sorted[0], "max_ms": runs_sorted[-1], "runs_ms": runs,
                   "threads": args.threads, "placement": args.placement,
                   "torch": torch.__version__}, f, indent=2)


if __name__ == "__main__":
    main()
