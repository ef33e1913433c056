#!/usr/bin/env python3
"""The PyTorch eager peers of scalescope-bench: the same RoBERTa-for-QA forward, written with
torch.nn.functional, on the same checkpoint, threads and sequence length.

--variant float: the float32 checkpoint's forward, the peer of the reference forward.
--variant fms-fallback: the FP8 checkpoint run as fms_mo runs FP8 Linears on a CPU (its
_scaled_mm CPU fallback in fms_mo/aiu_addons/fp8/fp8_spyre_op.py): per-token activation scales,
then both operands converted to float32 and multiplied by their scales at every call, then
addmm. PyTorch 1.13 has no float8 dtype, so the activations' rounding to E4M3 is left out and the
weight codes are decoded by a table lookup where fms_mo casts: the peer does no more work than
fms_mo's path, so a ratio against it does not flatter the engine.
--variant bf16: the float32 checkpoint's tensors cast to bfloat16 once and the same forward run in
bfloat16 throughout (PyTorch 1.13's oneDNN bf16 matmuls where the CPU has AVX-512 bf16): what a user
who wants speed runs instead of the exact FP8 emulation, the peer issue 53 measures the fp8 forward
against. --rows N runs N sequences of --seq tokens in one forward (4 for the bench's 4 x seq row).
--variant embed: scalescope-bench --embed's peer, a sentence-transformers RoBERTa embedder (the bare
RobertaModel, mean pooling over the attention mask, L2 normalize) in float32 over the token ids the
bench wrote (--ids), in batches of --batch rows; it reports texts per second and the first rows'
embeddings, which the bench checks against its own float32 ones.

Development tool (needs Debian's python3-torch); the product itself is C++."""
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

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "I64": torch.int64,
          "F8_E4M3": torch.uint8, "U8": torch.uint8}


def e4m3_table():
    """The 256 E4M3 values by code (NaN for 0x7F/0xFF): sign, 4 exponent bits (bias 7), 3 mantissa bits."""
    values = []
    for code in range(256):
        sign = -1.0 if code & 0x80 else 1.0
        exponent, mantissa = (code >> 3) & 0xF, code & 0x7
        if exponent == 0xF and mantissa == 0x7:
            values.append(float("nan"))
        elif exponent == 0:
            values.append(sign * mantissa / 8.0 * 2.0 ** -6)
        else:
            values.append(sign * (1.0 + mantissa / 8.0) * 2.0 ** (exponent - 7))
    return torch.tensor(values, dtype=torch.float32)


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
        tensor = tensor.reshape(entry["shape"])
        tensors[name] = tensor if tensor.dtype == torch.uint8 else tensor.float()
    return tensors


class FmsFallbackLinear:
    """One FP8 Linear as fms_mo's CPU fallback runs it: codes and scales kept, dequantized per call."""

    def __init__(self, codes, weight_scale, bias, table):
        self.codes = codes.long()  # the index a float8 -> float32 cast would be; made once
        self.weight_scale = weight_scale.reshape(-1, 1)
        self.bias = bias
        self.table = table

    def __call__(self, x):
        rows = x.reshape(-1, x.shape[-1])
        scale = rows.abs().amax(dim=1, keepdim=True).clamp(min=torch.finfo(torch.float32).tiny) / 448.0
        quantized = (rows / scale).clamp(-448.0, 448.0)       # stands for the float8 cast
        mat1 = quantized * scale                              # to float32, times its scale
        mat2 = self.table[self.codes] * self.weight_scale     # to float32, times its scale, every call
        out = torch.addmm(self.bias, mat1, mat2.t())
        return out.reshape(*x.shape[:-1], out.shape[-1])


def fms_fallback_weights(float_weights, fp8_dir, config):
    """The float checkpoint's tensors with every Linear the FP8 checkpoint quantized replaced by a
    FmsFallbackLinear over its codes."""
    stored = read_safetensors(f"{fp8_dir}/model.safetensors")
    table = e4m3_table()
    weights = dict(float_weights)
    for name, tensor in stored.items():
        if name.endswith(".weight") and tensor.dtype == torch.uint8:
            module = name[: -len(".weight")]
            weights[name] = FmsFallbackLinear(tensor, stored[module + ".weight_scale"].float(),
                                              stored[module + ".bias"].float(), table)
        elif tensor.dtype != torch.uint8:
            weights[name] = tensor
    return weights


def encoder(w, config, ids, prefix="roberta."):
    """The last hidden states [batch, seq, hidden]; every row as long as the others (no padding, so
    no attention mask), as the benches' inputs are."""
    hidden = config["hidden_size"]
    heads = config["num_attention_heads"]
    eps = config["layer_norm_eps"]
    pad = config["pad_token_id"]
    mask = ids.ne(pad).long()
    positions = torch.cumsum(mask, 1) * mask + pad
    x = (F.embedding(ids, w[prefix + "embeddings.word_embeddings.weight"])
         + F.embedding(positions, w[prefix + "embeddings.position_embeddings.weight"])
         + w[prefix + "embeddings.token_type_embeddings.weight"][0])
    x = F.layer_norm(x, (hidden,), w[prefix + "embeddings.LayerNorm.weight"], w[prefix + "embeddings.LayerNorm.bias"],
                     eps)
    b, s, _ = x.shape
    d = hidden // heads
    for i in range(config["num_hidden_layers"]):
        p = f"{prefix}encoder.layer.{i}."
        def lin(t, m):
            weight = w[p + m + ".weight"]
            return weight(t) if callable(weight) else F.linear(t, weight, w[p + m + ".bias"])
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
    return x


def forward(w, config, ids):
    x = encoder(w, config, ids)
    head = w["qa_outputs.weight"]
    return head(x) if callable(head) else F.linear(x, head, w["qa_outputs.bias"])


def embed(w, config, ids, prefix):
    """sentence-transformers' Pooling (mean over the attention mask) then Normalize, on the bare model."""
    x = encoder(w, config, ids, prefix)
    mask = ids.ne(config["pad_token_id"]).unsqueeze(-1).float()
    return F.normalize((x * mask).sum(1) / mask.sum(1).clamp(min=1e-9), p=2.0, dim=1)


def embed_pass(w, config, rows, batch, prefix):
    """Every row embedded, `batch` rows per forward; the embeddings in row order."""
    return torch.cat([embed(w, config, torch.tensor(rows[first:first + batch]), prefix)
                      for first in range(0, len(rows), batch)])


def timed(repeats, work):
    """`work` once to warm up, then `repeats` timed runs: their times in ms, and the last result."""
    work(True)
    runs, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = work(False)
        runs.append((time.perf_counter() - start) * 1e3)
    return runs, result


def run_embed(args, config, weights):
    """The embed variant's timed passes over the bench's ids, and what its report adds."""
    with open(args.ids) as f:
        rows = json.load(f)["ids"]
    if any(len(row) != len(rows[0]) for row in rows):
        sys.exit("torch_peer.py --variant embed runs rows of one length (its encoder has no attention mask)")
    # sentence-transformers saves a RoBERTa embedder's tensors without the family prefix.
    prefix = "" if "embeddings.word_embeddings.weight" in weights else "roberta."
    # The warm-up is one batch: a whole pass would double the peer's time on a shared machine.
    runs, embeddings = timed(args.repeats, lambda warm_up: embed_pass(
        weights, config, rows[:args.batch] if warm_up else rows, args.batch, prefix))
    return runs, {"texts": len(rows), "tokens_per_text": len(rows[0]), "batch": args.batch,
                  "embeddings_head": embeddings[:16].tolist()}


def run_forward(args, config, weights):
    """The QA forward's timed runs on the bench's input of --rows sequences (seed 7, <s> ... </s>)."""
    generator = torch.Generator().manual_seed(7)
    ids = torch.randint(4, 50004, (args.rows, args.seq), generator=generator)
    ids[:, 0], ids[:, -1] = 0, 2
    runs, _ = timed(args.repeats, lambda warm_up: forward(weights, config, ids))
    return runs, {"rows": args.rows}


def bf16_weights(weights):
    """Every float tensor as bfloat16, made once before the timed runs (a bf16 user's model.to(bfloat16))."""
    return {name: tensor.to(torch.bfloat16) if tensor.is_floating_point() else tensor
            for name, tensor in weights.items()}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--seq", type=int, default=384)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--output", required=True)
    parser.add_argument("--fp8-checkpoint", help="the FP8 checkpoint (for --variant fms-fallback)")
    parser.add_argument("--variant", choices=["float", "fms-fallback", "bf16", "embed"], default="float")
    parser.add_argument("--ids", help="--variant embed: a JSON file {\"ids\": [[...], ...]} of equal-length rows")
    parser.add_argument("--rows", type=int, default=1, help="forward variants: sequences per forward")
    parser.add_argument("--batch", type=int, default=16, help="--variant embed: rows per forward")
    parser.add_argument("--placement", choices=["torch", "engine"], default="torch",
                        help="torch: torch.set_num_threads(N) as PyTorch users do; engine: OpenBLAS N, OpenMP 1")
    args = parser.parse_args()
    torch.set_num_threads(1 if args.placement == "engine" else args.threads)
    with open(f"{args.checkpoint}/config.json") as f:
        config = json.load(f)
    weights = read_safetensors(f"{args.checkpoint}/model.safetensors")
    if args.variant == "fms-fallback":
        weights = fms_fallback_weights(weights, args.fp8_checkpoint, config)
    elif args.variant == "bf16":
        weights = bf16_weights(weights)
    with torch.inference_mode():
        runs, extra = (run_embed if args.variant == "embed" else run_forward)(args, config, weights)
    runs_sorted = sorted(runs)
    n = len(runs_sorted)
    median = runs_sorted[n // 2] if n % 2 else 0.5 * (runs_sorted[n // 2 - 1] + runs_sorted[n // 2])
    if args.variant == "embed":
        extra["texts_per_second"] = extra["texts"] / (median / 1e3)
    with open(args.output, "w") as f:
        json.dump({"median_ms": median, "min_ms": runs_sorted[0], "max_ms": runs_sorted[-1], "runs_ms": runs,
                   "threads": args.threads, "placement": args.placement, "variant": args.variant,
                   "torch": torch.__version__, **extra}, f, indent=2)


if __name__ == "__main__":
    main()
