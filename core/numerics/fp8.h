#pragma once
// Exact FP8 codecs (docs/ARCHITECTURE.md "FP8 numerics").
// E4M3FN: 1 sign, 4 exponent bits (bias 7), 3 mantissa bits, subnormals, no infinities,
// S.1111.111 is NaN, largest finite 448. E5M2: IEEE-like (bias 15), infinities, max 57344.
// Encoding rounds to nearest, ties to even. Decoding is a 256-entry table.
#include <cstddef>
#include <cstdint>

namespace scalescope::fp8 {

constexpr float kE4M3Max = 448.0f;
// |x / s| above this counts as clipped (docs/ARCHITECTURE.md: |x / s| > 448, up to float rounding). A dynamic
// scale s = amax / 448 is itself rounded, so the row's own maximum lands at amax / s = 448.00003
// (one float step of 448) about as often as at 448, though clamping it changes nothing. Four steps
// (4 * 2^-15) absorb the two roundings; a static scale that is too small clips far beyond them.
constexpr float kE4M3ClipThreshold = kE4M3Max + 4.0f / 32768.0f;
constexpr float kE5M2Max = 57344.0f;
constexpr uint8_t kE4M3NaN = 0x7F;

float decodeE4M3(uint8_t code);
float decodeE5M2(uint8_t code);

// Round-to-nearest-even; finite values beyond +-448 saturate to +-448 (the emulation clamps
// before encoding anyway), NaN gives 0x7F, -0.0 gives 0x80.
uint8_t encodeE4M3(float value);
// Round-to-nearest-even; values past the largest finite after rounding become +-Inf, NaN 0x7F.
uint8_t encodeE5M2(float value);

// The value E4M3(clamp(x, -448, 448)) decodes to, computed without going through the code:
// this is the hot path of activation quantization and must agree with decodeE4M3(encodeE4M3(x))
// bit for bit (tested over all codes and their midpoints).
float roundToE4M3(float value);

// dst[i] = roundToE4M3(src[i] / scale) * scale, in float32, for n values (dst may be src).
void quantDequantE4M3(const float* src, std::size_t n, float scale, float* dst);
// The same in place.
inline void quantDequantE4M3(float* values, std::size_t n, float scale)
{
    quantDequantE4M3(values, n, scale, values);
}

// dst[i] = roundToE4M3(src[i] / scale), the E4M3 values themselves (the scale is applied later,
// e.g. after a GEMM on the values): quantDequantE4M3 without the final multiplication.
void quantizeToE4M3Values(const float* src, std::size_t n, float scale, float* dst);

// The largest |x| of n values, NaN left out (0 for none): the amax a dynamic scale is taken from.
float maxMagnitude(const float* values, std::size_t n);

// quantizeToE4M3Values written as bfloat16 bits: every E4M3 value is exactly a bfloat16
// (the float32's upper half), so this is the same rounding written in the form a bf16 GEMM reads,
// in one pass over the input.
void quantizeToE4M3Bf16(const float* src, std::size_t n, float scale, uint16_t* dst);

// Decode n codes and multiply by one scale: out[i] = decodeE4M3(codes[i]) * scale.
void dequantizeE4M3(const uint8_t* codes, std::size_t n, float scale, float* out);

// Encode n values as E4M3(clamp(x / scale)) codes.
void quantizeE4M3(const float* values, std::size_t n, float scale, uint8_t* codes);

} // namespace scalescope::fp8
