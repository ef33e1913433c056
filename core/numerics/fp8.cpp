// FP8 codecs. Decoding uses tables computed at compile time. Encoding rounds the float32 bit
// pattern with integer round-to-nearest-even (lrint for the subnormal range). roundToE4M3 is a
// separate, branch-free formulation (the activation hot path) that the tests hold to agree with
// decodeE4M3(encodeE4M3(x)) bit for bit, so each implementation checks the other.
//
// NaN encodes to 0x7F whatever its sign, as fp8.h documents; roundToE4M3 returns its NaN input
// unchanged (sign included), which decodes to the same "not a number" either way.
#include "numerics/fp8.h"

#include "common/cpu_clones.h"

#include <array>
#include <cmath>
#include <cstring>
#include <limits>

namespace scalescope::fp8 {
namespace {

uint32_t floatBits(float value)
{
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    return bits;
}

constexpr float powerOfTwo(int exponent)
{
    float result = 1.0f;
    for (; exponent > 0; --exponent)
        result *= 2.0f;
    for (; exponent < 0; ++exponent)
        result *= 0.5f;
    return result;
}

// Generic decoder for a 1-sign / exponentBits / mantissaBits minifloat with subnormals.
// allOnesIsSpecial: E5M2 style (exponent all ones is Inf/NaN); otherwise E4M3FN style (only
// S.1111.111 is NaN).
constexpr float decodeMinifloat(uint8_t code, int exponentBits, int mantissaBits, int bias, bool allOnesIsSpecial)
{
    const bool negative = (code & 0x80) != 0;
    const int exponentMask = (1 << exponentBits) - 1;
    const int mantissaMask = (1 << mantissaBits) - 1;
    const int exponent = (code >> mantissaBits) & exponentMask;
    const int mantissa = code & mantissaMask;
    float magnitude = 0.0f;
    if (allOnesIsSpecial && exponent == exponentMask) {
        magnitude = mantissa == 0 ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
    } else if (!allOnesIsSpecial && exponent == exponentMask && mantissa == mantissaMask) {
        magnitude = std::numeric_limits<float>::quiet_NaN();
    } else if (exponent == 0) {
        magnitude = static_cast<float>(mantissa) * powerOfTwo(1 - bias - mantissaBits);
    } else {
        magnitude = (1.0f + static_cast<float>(mantissa) * powerOfTwo(-mantissaBits)) * powerOfTwo(exponent - bias);
    }
    return negative ? -magnitude : magnitude;
}

constexpr std::array<float, 256> buildTable(int exponentBits, int mantissaBits, int bias, bool allOnesIsSpecial)
{
    std::array<float, 256> table{};
    for (int code = 0; code < 256; ++code)
        table[static_cast<std::size_t>(code)] =
            decodeMinifloat(static_cast<uint8_t>(code), exponentBits, mantissaBits, bias, allOnesIsSpecial);
    return table;
}

constexpr std::array<float, 256> kE4M3Table = buildTable(4, 3, 7, false);
constexpr std::array<float, 256> kE5M2Table = buildTable(5, 2, 15, true);

// Rounds the magnitude bits of a float32 in the normal range of the target format to
// `mantissaBits` mantissa bits (round to nearest, ties to even). A carry out of the mantissa
// correctly bumps the exponent. Returns the rounded magnitude bits.
uint32_t roundMagnitudeBits(uint32_t magnitudeBits, int mantissaBits)
{
    const int droppedBits = 23 - mantissaBits;
    const uint32_t halfway = 1u << (droppedBits - 1);
    const uint32_t dropped = magnitudeBits & ((1u << droppedBits) - 1);
    uint32_t kept = magnitudeBits >> droppedBits;
    if (dropped > halfway || (dropped == halfway && (kept & 1u)))
        ++kept;
    return kept << droppedBits;
}

// roundToE4M3, scalar and in lanes. Both work on the float32 bit pattern:
// - clamp the magnitude to 448 (NaN patterns are larger than 448's and are restored at the end);
// - |x| >= 2^-6 (normal E4M3): keep 3 mantissa bits, rounding half to even by adding 0x7FFFF plus
//   the lowest kept bit and truncating; the clamp keeps the carry from passing 448;
// - |x| < 2^-6 (subnormal E4M3, multiples of 2^-9): adding 2^14 puts the 2^-9 bit at the last
//   float32 mantissa place, so the FPU's round-to-nearest-even rounds and the subtraction is exact.
//   The compiler may not fold (x + 2^14) - 2^14 because the project never uses -ffast-math.
// Both roundings are computed and one is selected, so there are no branches.
constexpr int32_t kE4M3MaxBits = 0x43E00000;      // 448
constexpr int32_t kE4M3MinNormalBits = 0x3C800000; // 2^-6
constexpr int32_t kFloatInfinityBits = 0x7F800000;
constexpr float kSubnormalShifter = 16384.0f;      // 2^14

inline float roundToE4M3Scalar(float value)
{
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    const uint32_t sign = bits & 0x80000000u;
    const int32_t magnitude = static_cast<int32_t>(bits & 0x7FFFFFFFu);
    const int32_t clamped = magnitude > kE4M3MaxBits ? kE4M3MaxBits : magnitude;
    const int32_t normalRounded = (clamped + 0x7FFFF + ((clamped >> 20) & 1)) & static_cast<int32_t>(0xFFF00000u);
    float absolute;
    std::memcpy(&absolute, &clamped, sizeof absolute);
    const float subnormalRounded = (absolute + kSubnormalShifter) - kSubnormalShifter;
    int32_t subnormalBits;
    std::memcpy(&subnormalBits, &subnormalRounded, sizeof subnormalBits);
    int32_t rounded = clamped < kE4M3MinNormalBits ? subnormalBits : normalRounded;
    rounded = magnitude > kFloatInfinityBits ? magnitude : rounded;
    const uint32_t resultBits = sign | static_cast<uint32_t>(rounded);
    float result;
    std::memcpy(&result, &resultBits, sizeof result);
    return result;
}

// GCC/Clang vector extensions: at -O2 the compiler does not vectorise loops of unknown length.
// Two widths, each measured on the machines its path runs on. 32 bytes for the float32 FP8 path's
// kernels, which run where there is no bf16 (AVX2 machines): one AVX2 register, two SSE2 ones for
// the baseline. 64 bytes for the bf16 path's kernel, which runs on AVX-512 machines: one register
// there. GCC's AVX2 clone of a 64-byte loop splits every value into two halves and spills them to
// the stack: per-token quantize-dequantize (the row's amax, then the rounding) took 5.1 ns a value
// that way on an AVX2 EPYC, against 0.44 ns with 32-byte lanes (maxMagnitude's four running maxima
// included), and 1.2 ns for the earlier passes (a scalar amax, a copy, then 16-byte lanes without
// clones). Comparisons yield all-ones or zero lanes, used as blend masks.
typedef float FloatLanes __attribute__((vector_size(32)));
typedef int32_t IntLanes __attribute__((vector_size(32)));
constexpr std::size_t kLanes = sizeof(FloatLanes) / sizeof(float);
typedef float WideFloatLanes __attribute__((vector_size(64)));
typedef int32_t WideIntLanes __attribute__((vector_size(64)));
typedef uint16_t WideHalfWordLanes __attribute__((vector_size(32)));
constexpr std::size_t kWideLanes = sizeof(WideFloatLanes) / sizeof(float);

// Lane helpers take and give vectors by reference, and reinterpret_cast between vector types of
// one size is a bit cast without a call: clang refuses a 32- or 64-byte vector passed or returned
// by value in code compiled without AVX (the baseline clone), and a reference raises no ABI question.
template <typename Ints>
inline void selectLanes(Ints& out, const Ints& mask, const Ints& ifSet, const Ints& ifClear)
{
    out = (mask & ifSet) | (~mask & ifClear);
}

// roundToE4M3Scalar, lane by lane, in place, for either lane width.
template <typename Floats, typename Ints>
inline void roundToE4M3Lanes(Floats& values)
{
    const Ints bits = reinterpret_cast<Ints>(values);
    const Ints sign = bits & static_cast<int32_t>(0x80000000u);
    const Ints magnitude = bits & 0x7FFFFFFF;
    Ints clamped;
    selectLanes<Ints>(clamped, magnitude > kE4M3MaxBits, Ints{} + kE4M3MaxBits, magnitude);
    const Ints normalRounded = (clamped + 0x7FFFF + ((clamped >> 20) & 1)) & static_cast<int32_t>(0xFFF00000u);
    const Floats subnormalRounded = (reinterpret_cast<Floats>(clamped) + kSubnormalShifter) - kSubnormalShifter;
    Ints rounded;
    selectLanes<Ints>(rounded, clamped < kE4M3MinNormalBits, reinterpret_cast<Ints>(subnormalRounded), normalRounded);
    selectLanes<Ints>(rounded, magnitude > kFloatInfinityBits, magnitude, rounded);
    values = reinterpret_cast<Floats>(sign | rounded);
}

// Per lane m = m < |x| ? |x| : m, as the scalar loop: a NaN compares false and never wins.
inline void laneMaxMagnitude(FloatLanes& maxima, const float* values)
{
    IntLanes bits;
    std::memcpy(&bits, values, sizeof bits);
    const IntLanes magnitude = bits & 0x7FFFFFFF;
    IntLanes kept;
    selectLanes<IntLanes>(kept, maxima < reinterpret_cast<FloatLanes>(magnitude), magnitude,
                          reinterpret_cast<IntLanes>(maxima));
    maxima = reinterpret_cast<FloatLanes>(kept);
}

} // namespace

float decodeE4M3(uint8_t code)
{
    return kE4M3Table[code];
}

float decodeE5M2(uint8_t code)
{
    return kE5M2Table[code];
}

uint8_t encodeE4M3(float value)
{
    if (std::isnan(value))
        return kE4M3NaN;
    const uint32_t bits = floatBits(value);
    const uint8_t sign = static_cast<uint8_t>((bits >> 24) & 0x80u);
    const float absolute = std::fabs(value);
    if (absolute >= kE4M3Max)
        return static_cast<uint8_t>(sign | 0x7E);
    if (absolute < 0.015625f) { // below 2^-6: subnormal codes count multiples of 2^-9
        // absolute * 512 is exact; lrint rounds half to even in the default rounding mode.
        const long steps = std::lrint(static_cast<double>(absolute) * 512.0);
        return static_cast<uint8_t>(sign | static_cast<uint8_t>(steps)); // steps == 8 is 2^-6, code 0x08
    }
    const uint32_t rounded = roundMagnitudeBits(bits & 0x7FFFFFFFu, 3);
    const int exponent = static_cast<int>(rounded >> 23) - 127;
    const uint32_t mantissa = (rounded >> 20) & 0x7u;
    uint32_t code = (static_cast<uint32_t>(exponent + 7) << 3) | mantissa;
    if (code > 0x7E) // only reachable by rounding up from just below 448; saturate
        code = 0x7E;
    return static_cast<uint8_t>(sign | code);
}

uint8_t encodeE5M2(float value)
{
    if (std::isnan(value))
        return 0x7F;
    const uint32_t bits = floatBits(value);
    const uint8_t sign = static_cast<uint8_t>((bits >> 24) & 0x80u);
    const float absolute = std::fabs(value);
    constexpr uint8_t kInfinity = 0x7C;
    if (absolute >= 65536.0f) // 2^16 is past the largest exponent even before rounding
        return static_cast<uint8_t>(sign | kInfinity);
    if (absolute < 6.103515625e-05f) { // below 2^-14: subnormal codes count multiples of 2^-16
        const long steps = std::lrint(static_cast<double>(absolute) * 65536.0);
        return static_cast<uint8_t>(sign | static_cast<uint8_t>(steps)); // steps == 4 is 2^-14, code 0x04
    }
    const uint32_t rounded = roundMagnitudeBits(bits & 0x7FFFFFFFu, 2);
    const int exponent = static_cast<int>(rounded >> 23) - 127;
    const uint32_t mantissa = (rounded >> 21) & 0x3u;
    uint32_t code = (static_cast<uint32_t>(exponent + 15) << 2) | mantissa;
    if (code >= kInfinity) // rounded past 57344
        code = kInfinity;
    return static_cast<uint8_t>(sign | code);
}

float roundToE4M3(float value)
{
    return roundToE4M3Scalar(value);
}

SCALESCOPE_CPU_CLONES void quantDequantE4M3(const float* src, std::size_t n, float scale, float* dst)
{
    // Division rather than multiplication by 1/scale: docs/ARCHITECTURE.md fixes the arithmetic as x / s.
    std::size_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
        FloatLanes lanes;
        std::memcpy(&lanes, src + i, sizeof lanes);
        lanes = lanes / scale;
        roundToE4M3Lanes<FloatLanes, IntLanes>(lanes);
        lanes = lanes * scale;
        std::memcpy(dst + i, &lanes, sizeof lanes);
    }
    for (; i < n; ++i)
        dst[i] = roundToE4M3Scalar(src[i] / scale) * scale;
}

SCALESCOPE_CPU_CLONES void quantizeToE4M3Values(const float* src, std::size_t n, float scale, float* dst)
{
    std::size_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
        FloatLanes lanes;
        std::memcpy(&lanes, src + i, sizeof lanes);
        lanes = lanes / scale;
        roundToE4M3Lanes<FloatLanes, IntLanes>(lanes);
        std::memcpy(dst + i, &lanes, sizeof lanes);
    }
    for (; i < n; ++i)
        dst[i] = roundToE4M3Scalar(src[i] / scale);
}

SCALESCOPE_CPU_CLONES float maxMagnitude(const float* values, std::size_t n)
{
    // Four running maxima, so that each comparison does not wait on the one before; the maximum of
    // the same values in any grouping is the same value.
    FloatLanes maxima[4] = {FloatLanes{} + 0.0f, FloatLanes{} + 0.0f, FloatLanes{} + 0.0f, FloatLanes{} + 0.0f};
    std::size_t i = 0;
    for (; i + 4 * kLanes <= n; i += 4 * kLanes)
        for (std::size_t k = 0; k < 4; ++k)
            laneMaxMagnitude(maxima[k], values + i + k * kLanes);
    for (; i + kLanes <= n; i += kLanes)
        laneMaxMagnitude(maxima[0], values + i);
    float amax = 0.0f;
    for (const FloatLanes& m : maxima)
        for (std::size_t lane = 0; lane < kLanes; ++lane)
            amax = amax < m[lane] ? m[lane] : amax;
    for (; i < n; ++i) {
        const float magnitude = std::fabs(values[i]);
        amax = amax < magnitude ? magnitude : amax;
    }
    return amax;
}

SCALESCOPE_CPU_CLONES void quantizeToE4M3Bf16(const float* src, std::size_t n, float scale, uint16_t* dst)
{
    // Every rounded value is an E4M3 value, exact in bfloat16: its upper 16 bits are the bf16 bits.
    std::size_t i = 0;
    for (; i + kWideLanes <= n; i += kWideLanes) {
        WideFloatLanes lanes;
        std::memcpy(&lanes, src + i, sizeof lanes);
        lanes = lanes / scale;
        roundToE4M3Lanes<WideFloatLanes, WideIntLanes>(lanes);
        const WideHalfWordLanes upper =
            __builtin_convertvector(reinterpret_cast<WideIntLanes>(lanes) >> 16, WideHalfWordLanes);
        std::memcpy(dst + i, &upper, sizeof upper);
    }
    for (; i < n; ++i)
        dst[i] = static_cast<uint16_t>(floatBits(roundToE4M3Scalar(src[i] / scale)) >> 16);
}

void dequantizeE4M3(const uint8_t* codes, std::size_t n, float scale, float* out)
{
    for (std::size_t i = 0; i < n; ++i)
        out[i] = kE4M3Table[codes[i]] * scale;
}

void quantizeE4M3(const float* values, std::size_t n, float scale, uint8_t* codes)
{
    for (std::size_t i = 0; i < n; ++i)
        codes[i] = encodeE4M3(values[i] / scale);
}

} // namespace scalescope::fp8
