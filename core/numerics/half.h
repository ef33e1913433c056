#pragma once
// bfloat16 and IEEE half conversions, exact, round-to-nearest-even on narrowing.
#include <cstdint>

namespace scalescope::half {

float bf16ToFloat(uint16_t bits);
uint16_t floatToBf16(float value);
float f16ToFloat(uint16_t bits);
uint16_t floatToF16(float value);

} // namespace scalescope::half
