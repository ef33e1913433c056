#include "numerics/mx.h"

#include <cmath>
#include <cstring>

namespace scalescope::mx {

uint8_t scaleExponent(float amax)
{
    uint32_t bits = 0;
    const float magnitude = std::fabs(amax);
    std::memcpy(&bits, &magnitude, sizeof bits);
    // Round to a power of two as upstream's bit trick does: a mantissa of 0.75 or more carries into
    // the exponent; the mantissa is then dropped (a subnormal that does not carry becomes 0).
    const uint32_t exponentField = ((bits + 0x200000u) & 0x7F800000u) >> 23;
    if (exponentField == 0)
        return 0;   // log2(0) = -inf, clamped to 0
    if (exponentField == 0xFF)
        return 255; // inf (or NaN), clamped to 255
    // 127 + floor(log2(2^(field - 127))) - 8 = field - 8, clamped below at 0 (never above 254 here).
    const int exponent = static_cast<int>(exponentField) - 8;
    return static_cast<uint8_t>(exponent < 0 ? 0 : exponent);
}

float scaleFromExponent(uint8_t e)
{
    return std::ldexp(1.0f, static_cast<int>(e) - kE8M0Bias);
}

float activationScale(float amax)
{
    return scaleFromExponent(scaleExponent(amax));
}

} // namespace scalescope::mx
