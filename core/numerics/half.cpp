// Narrowing works on the float32 bit pattern (integer round-to-nearest-even) so that NaN payloads,
// infinities and the overflow threshold are handled explicitly rather than by whatever the FPU does.
#include "numerics/half.h"

#include <cmath>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define SCALESCOPE_HAVE_F16C_PATH 1
#endif

namespace scalescope::half {
namespace {

uint32_t floatBits(float value)
{
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    return bits;
}

float bitsToFloat(uint32_t bits)
{
    float value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
}

bool isNaNBits(uint32_t bits)
{
    return (bits & 0x7F800000u) == 0x7F800000u && (bits & 0x007FFFFFu) != 0;
}

} // namespace

float bf16ToFloat(uint16_t bits)
{
    return bitsToFloat(static_cast<uint32_t>(bits) << 16);
}

uint16_t floatToBf16(float value)
{
    const uint32_t bits = floatBits(value);
    if (isNaNBits(bits)) {
        // Truncation could drop every payload bit and turn the NaN into an infinity; setting the
        // quiet bit keeps it a NaN and keeps the sign.
        return static_cast<uint16_t>((bits >> 16) | 0x0040u);
    }
    // Infinity stays infinity (its low half is zero) and the largest floats round to infinity,
    // as IEEE round-to-nearest requires.
    const uint32_t rounded = bits + 0x7FFFu + ((bits >> 16) & 1u);
    return static_cast<uint16_t>(rounded >> 16);
}

float f16ToFloat(uint16_t bits)
{
    const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
    const uint32_t exponent = (bits >> 10) & 0x1Fu;
    const uint32_t mantissa = bits & 0x3FFu;
    if (exponent == 0x1F)
        return bitsToFloat(sign | 0x7F800000u | (mantissa << 13));
    if (exponent == 0) {
        const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-08f; // 2^-24, exact
        return sign ? -magnitude : magnitude;
    }
    return bitsToFloat(sign | ((exponent - 15 + 127) << 23) | (mantissa << 13));
}

uint16_t floatToF16(float value)
{
    const uint32_t bits = floatBits(value);
    const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
    const uint32_t magnitudeBits = bits & 0x7FFFFFFFu;
    if (isNaNBits(bits))
        return static_cast<uint16_t>(sign | 0x7E00u | ((magnitudeBits >> 13) & 0x1FFu));
    if (magnitudeBits >= 0x47800000u) // 2^16 and above, infinity included
        return static_cast<uint16_t>(sign | 0x7C00u);
    if (magnitudeBits < 0x38800000u) { // below 2^-14: subnormal, multiples of 2^-24
        // The scaling by 2^24 is exact; lrint rounds half to even in the default rounding mode.
        const long steps = std::lrint(static_cast<double>(bitsToFloat(magnitudeBits)) * 16777216.0);
        return static_cast<uint16_t>(sign | static_cast<uint16_t>(steps)); // 1024 steps is 2^-14, code 0x0400
    }
    // Re-bias the exponent and keep 10 mantissa bits; a carry out of the mantissa moves into the
    // exponent, and past 65504 into the infinity pattern 0x7C00.
    const uint32_t rebased = magnitudeBits - ((127u - 15u) << 23);
    const uint32_t dropped = rebased & 0x1FFFu;
    uint32_t kept = rebased >> 13;
    if (dropped > 0x1000u || (dropped == 0x1000u && (kept & 1u)))
        ++kept;
    if (kept >= 0x7C00u)
        kept = 0x7C00u;
    return static_cast<uint16_t>(sign | kept);
}

namespace {

void roundToHalfScalar(float* values, std::size_t count)
{
    for (std::size_t i = 0; i < count; ++i)
        values[i] = f16ToFloat(floatToF16(values[i]));
}

#ifdef SCALESCOPE_HAVE_F16C_PATH
// vcvtps2ph with round-to-nearest-even (immediate 0) rounds exactly as floatToF16; only this
// function is compiled for F16C, and it runs only where the CPU reports it.
__attribute__((target("avx,f16c"))) void roundToHalfF16c(float* values, std::size_t count)
{
    std::size_t i = 0;
    for (; i + 8 <= count; i += 8) {
        const __m128i halves = _mm256_cvtps_ph(_mm256_loadu_ps(values + i), _MM_FROUND_TO_NEAREST_INT);
        _mm256_storeu_ps(values + i, _mm256_cvtph_ps(halves));
    }
    roundToHalfScalar(values + i, count - i);
}

bool cpuHasF16c()
{
    // F16C from CPUID leaf 1 (ECX bit 29) rather than __builtin_cpu_supports("f16c"), which clang 14
    // (the fuzz build's compiler) does not know; "avx" also says the OS saves the YMM registers.
    static const bool has = [] {
        unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
        return __builtin_cpu_supports("avx") && __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
    }();
    return has;
}
#endif

} // namespace

void roundToHalfInPlace(float* values, std::size_t count)
{
#ifdef SCALESCOPE_HAVE_F16C_PATH
    if (cpuHasF16c()) {
        roundToHalfF16c(values, count);
        return;
    }
#endif
    roundToHalfScalar(values, count);
}

} // namespace scalescope::half
