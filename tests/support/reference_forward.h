#pragma once
// An independent RoBERTa and BERT forward pass in plain loops (float32, batch 1, no padding), written for the
// tests: it shares no code path with core/engine/encoder_model.cpp. FP8 emulation here finds the
// nearest E4M3 value by searching all 256 codes decoded from their bit fields (ties to the even code).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace scalescope::testing {

struct ReferenceTensor {
    std::vector<int64_t> shape;
    std::vector<float> values;
};

// mode: "fp8" (quantized Linears quantize their inputs as the checkpoint says), "dequant"
// (dequantized weights, float activations) or "fp16" (fp8 with every stored non-FP8 parameter and
// every module output rounded to half, by the compiler's _Float16 conversion). A float checkpoint
// runs the same in fp8 and dequant. F8_E4M3 word embeddings decode as decode(q[id]) * scale (one
// scale, or one per row) in every mode; a decoder tied to them runs on those rows in float.
// Result keys: "start_logits"/"end_logits" (QA) or "logits" (MLM), "<family>.embeddings.output",
// "<family>.encoder.layer.N.output" (family "roberta" or "bert"), and for every Linear
// "<module>.input" and "<module>.output".
// tokenTypeIds: one per input id, or empty for all 0 (BERT's segment ids; RoBERTa has one type).
// attention: "float", or "fp8-aiu" (AIU FP8 attention: K and V cast to E4M3 with one scale for the
// sequence from the ranges 200 and 100, adding "<layer>.attention.self.key_fp8.input"/".output" and
// the same for value_fp8 to the result).
std::map<std::string, ReferenceTensor> referenceForward(const std::string& checkpointDir,
                                                        const std::vector<int64_t>& inputIds,
                                                        const std::string& mode,
                                                        const std::vector<int64_t>& tokenTypeIds = {},
                                                        const std::string& attention = "float");

// The E4M3 value nearest to x (after clamping to +-448), ties to the even code, by exhaustive search.
float referenceRoundToE4M3(float x);
// compressed-tensors' MXFP8 scale exponent of a run (its E8M0 byte e, scale 2^(e - 127)), as
// docs/ARCHITECTURE.md states it, from frexp: amax = m * 2^E with 1 <= m < 2 gives 127 + E - 8,
// or 127 + E + 1 - 8 when m >= 1.75, clamped to [0, 255]; 0 for amax 0, 255 for inf.
uint8_t referenceMxfp8Exponent(float amax);
// E4M3 decoding from the bit fields.
float referenceDecodeE4M3(uint8_t code);

} // namespace scalescope::testing
