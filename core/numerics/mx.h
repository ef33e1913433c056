#pragma once
// MXFP8 scales (compressed-tensors' `mxfp8-quantized` format and its MXFP8 preset), read from
// vllm-project/compressed-tensors at commit ac8e2ba82f4e0d5eaa40069f8fc642738f124cd4:
// quantization/quant_scheme.py (MXFP8 preset), quantization/utils/mxfp_utils.py,
// quantization/utils/helpers.py (calculate_qparams), compressors/mxfp8/base.py,
// compressors/mx_utils.py, quantization/lifecycle/forward_helpers.py.
//
// The preset: weights and input activations are 8-bit float, strategy "group", group_size 32,
// symmetric, scale_dtype torch.uint8 (zp_dtype torch.uint8); weights static, activations dynamic.
// A scale is one E8M0 byte e per run of 32 input channels of a row, worth 2^(e - 127).
//
// On disk (format "mxfp8-quantized"): `<module>.weight` F8_E4M3 [out, in]; `<module>.weight_scale`
// U8 [out, in / 32] holding e (the compressor writes 127 + floor(log2(float scale)) as uint8); no
// zero point (symmetric), no input_scale (dynamic activations). W[o, i] = decode(q[o, i]) *
// 2^(e[o, i / 32] - 127). Upstream decodes e = 255 as 2^128 (inf in bfloat16); the OCP MX format
// calls it NaN. Neither is a usable weight scale: this workbench refuses it (see encoder_weights).
//
// The exponent of a run (calculate_qparams -> generate_mx_scales, the same for the weight observer
// and for dynamic activations), from amax = max |x| over the run (0 for an all-zero run):
//  1. round_to_power_2: add 2^(mantissa bits - 2) to amax's bit pattern, then keep only its sign
//     and exponent bits. For float32 that is + 0x200000, & 0xFF800000: amax = m * 2^E (1 <= m < 2)
//     becomes 2^(E + 1) when m >= 1.75 and 2^E otherwise (the added constant uses FP4 E2M1's one
//     mantissa bit, also for MXFP8); 0 stays 0, inf stays inf.
//  2. exponent = 127 + floor(log2(that)) - 8 (8 = floor(log2(448))): 119 + E, or 120 + E when
//     rounded up; -inf for 0, +inf for inf.
//  3. round_to_quantized_type_dtype(uint8): clamp to [0, 255], round. So a zero run, and any run
//     with amax below 1.75 * 2^-119, gets e = 0 (scale 2^-127, not replaced by the eps step, which
//     only replaces a scale equal to 0); only an infinite (or >= 1.75 * 2^127) amax gets 255.
//  4. scale = 2^(e - 127) in float32.
// The values are then quantized as every FP8 scheme: E4M3(clamp(x / scale, -448, 448)), round to
// nearest even, times scale. amax / scale lies in [224, 448), so the clamp never bites on a run's
// own values: m < 1.75 gives amax / 2^(E - 8) < 448, m >= 1.75 gives amax / 2^(E - 7) < 256.
// compressed-tensors splits a row into ceil(width / 32) runs and refuses a width that 32 does not
// divide; the engine runs a shorter last run by its own amax, like other group activations.
#include <cstdint>

namespace scalescope::mx {

constexpr int kBlock = 32;                // input channels per scale
constexpr uint8_t kE8M0Bias = 127;
constexpr uint8_t kE8M0NaN = 255;         // OCP MX's NaN; refused as a weight scale

// The E8M0 exponent compressed-tensors derives from a run's amax (steps 1-3 above).
uint8_t scaleExponent(float amax);

// 2^(e - 127) in float32 (2^-127 for e = 0, a float32 subnormal; inf for e = 255).
float scaleFromExponent(uint8_t e);

// scaleFromExponent(scaleExponent(amax)): the dynamic activation scale of a run.
float activationScale(float amax);

} // namespace scalescope::mx
