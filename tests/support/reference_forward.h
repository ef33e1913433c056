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
std::map<std::string, ReferenceTensor> referenceForward(const std::string& checkpointDir,
                                                        const std::vector<int64_t>& inputIds,
                                                        const std::string& mode,
                                                        const std::vector<int64_t>& tokenTypeIds = {});

// The E4M3 value nearest to x (after clamping to +-448), ties to the even code, by exhaustive search.
float referenceRoundToE4M3(float x);
// E4M3 decoding from the bit fields.
float referenceDecodeE4M3(uint8_t code);

} // namespace scalescope::testing
