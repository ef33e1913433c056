#pragma once
// bfloat16 and IEEE half conversions, exact, round-to-nearest-even on narrowing.
#include <cstddef>
#include <cstdint>

namespace scalescope::half {

float bf16ToFloat(uint16_t bits);
uint16_t floatToBf16(float value);
float f16ToFloat(uint16_t bits);
uint16_t floatToF16(float value);

// Each value replaced by the float32 of its IEEE half (round to nearest even; beyond 65504 it
// becomes inf, below 2^-24 zero; NaN stays NaN): what a float16 device stores. The fp16 run mode
// calls it on every module's output, so it uses the CPU's F16C conversions when it has them
// (the same rounding as floatToF16, checked exhaustively in the tests).
void roundToHalfInPlace(float* values, std::size_t count);

// The largest finite half and the smallest normal one: a module output above the first overflows
// on a float16 device, a non-zero one below the second loses precision (subnormal) or flushes.
constexpr float kHalfMax = 65504.0f;
constexpr float kHalfMinNormal = 6.103515625e-05f; // 2^-14

} // namespace scalescope::half
