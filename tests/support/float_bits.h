#pragma once
// Bit-exact float comparison for the numerics suites: QCOMPARE on floats is fuzzy, and the engine's
// FP8 numbers are held to the last bit.
#include <cmath>
#include <cstdint>
#include <cstring>

namespace scalescope::testing {

inline uint32_t bitsOf(float value)
{
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    return bits;
}

// Same value, same sign of zero; any NaN equals any NaN.
inline bool sameFloat(float a, float b)
{
    if (std::isnan(a) || std::isnan(b))
        return std::isnan(a) && std::isnan(b);
    return bitsOf(a) == bitsOf(b);
}

} // namespace scalescope::testing
