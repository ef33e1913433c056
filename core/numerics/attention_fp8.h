#pragma once
// AIU FP8 attention's K/V cast (docs/ARCHITECTURE.md "Run modes"), as fms_mo's math_fp8 does it
// (fms_mo/aiu_addons/fp8/fp8_attn.py at commit 308643fb, `_math_fp8_store_op` and
// `_math_fp8_compute_op` without scaled BMM, the path aiu-fms-testing-utils takes):
//   scale = max(amax(|X|) / range, 1e-5) per sequence, over every head and position of it, with the
//           fixed ranges K 200 and V 100 (upstream: "TODO: figure out better scales for AIU? These
//           come from vLLM"); the amax and the division by the range run in the activation dtype
//           (half on a float16 device), the scale is then held in float32;
//   X'    = decode(E4M3(X / scale)) * scale, the division in float32, rounding to nearest even,
//           the product rounded to the activation dtype by the caller (fp16 mode).
// The amax is taken over the sequence's real tokens, so a sequence gets the same scale alone or
// padded in a batch; fms_mo takes it over the padded tensor, which can only raise it.
// Besides the values, the cast reports what the headroom view needs: per head the amax and how many
// of its values E4M3 rounds to zero or to a subnormal.
//
// Torch-free, pure functions; no errors.
#include <cstdint>
#include <vector>

namespace scalescope::attention_fp8 {

constexpr float kKeyRange = 200.0f;
constexpr float kValueRange = 100.0f;
constexpr float kMinimumScale = 1e-5f;
// E4M3's smallest normal magnitude: a non-zero cast value below it is a subnormal.
constexpr float kSmallestNormal = 0.015625f; // 2^-6

// What one sequence's cast did, per head (heads split the feature dimension into equal runs).
struct SequenceCast {
    float scale = 0;
    std::vector<float> headAmax;        // max |x| of each head over the real tokens
    std::vector<int64_t> values;        // real-token values per head
    std::vector<int64_t> zeros;         // of them: x != 0 that the cast rounds to 0
    std::vector<int64_t> subnormals;    // of them: cast to a non-zero magnitude below 2^-6
};

// One sequence, `rows` token rows of `features` values (row stride `features`), `heads` equal runs
// of features. real[r] != 0 marks a real token (null: all real); padding rows are cast with the
// same scale but count nowhere. `halfScale`: the amax / range step runs in float16 (fp16 mode).
// Writes decode(E4M3(x / scale)) * scale in float32 to `out` (may equal `x`).
SequenceCast castSequence(const float* x, float* out, int64_t rows, int64_t features, int64_t heads,
                          const uint8_t* real, float range, bool halfScale);

} // namespace scalescope::attention_fp8
