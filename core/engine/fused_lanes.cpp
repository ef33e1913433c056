#include "engine/fused_lanes.h"

#include <cstring>

#include "engine/output_scan_lanes.h"

// GCC only, as common/cpu_clones.h and output_scan_lanes.cpp: the AVX-512 version is compiled beside
// a baseline binary and entered only after the CPU said it runs AVX-512F.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(SCALESCOPE_NO_CPU_CLONES)
#define SCALESCOPE_FUSED_AVX512 1
#endif

namespace scalescope::fused_lanes {
namespace {

typedef float Lanes __attribute__((vector_size(64)));
typedef int32_t LaneInts __attribute__((vector_size(64)));
constexpr int64_t kLanes = sizeof(Lanes) / sizeof(float);

// erfc(z) = t exp(-z^2 + P(t)), t = 1 / (1 + z / 2), for z >= 0, with P the Chebyshev fit of degree
// 9 published in Numerical Recipes (erfcc; fractional error below 1.2e-7 for every z): a relative
// bound, so GELU's small negative tail keeps its digits where 1 + erf(x) would cancel.
constexpr float kErfcFit[10] = {-1.26551223f, 1.00002368f, 0.37409196f,  0.09678418f,  -0.18628806f,
                                0.27886807f,  -1.13520398f, 1.48851587f, -0.82215223f, 0.17087277f};
constexpr float kInverseSqrt2 = 0.70710678118654752f;
// e^a as 2^k e^r, k = round(a / ln 2), r = a - k ln 2 in two parts (kLn2High has few enough bits
// that k * kLn2High is exact); e^r, |r| <= ln(2) / 2, by its Taylor series to r^7 / 7!, whose
// remainder (below 6e-9) is under half a float32 ulp.
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2High = 0.693359375f;
constexpr float kLn2Low = -2.12194440e-4f;
constexpr float kLnFloatMin = -87.3365447f; // ln(2^-126): below it 2^k is no normal float
constexpr float kRoundToInteger = 12582912.0f; // 1.5 * 2^23: (v + it) - it is v rounded to an integer

// GELU on 16 values in place. Every step is an IEEE operation on each lane alone, so the lane
// width (one AVX-512 register or four SSE2 ones) does not change a bit.
[[gnu::always_inline]] inline void geluSixteen(float* values)
{
    Lanes x;
    std::memcpy(&x, values, sizeof x);
    const Lanes z = (x < 0 ? -x : x) * kInverseSqrt2; // -x for x < 0, so -0 and NaN pass as they are
    const Lanes t = 1.0f / (1.0f + 0.5f * z);
    Lanes fit = Lanes{} + kErfcFit[9];
    for (int i = 8; i >= 0; --i)
        fit = fit * t + kErfcFit[i];
    Lanes a = fit - z * z; // the exponent: <= 0 (it is 0 at z = 0), -inf for |x| = inf, NaN for NaN
    const LaneInts normal = a >= kLnFloatMin; // false for NaN: no NaN reaches the integer conversion
    a = normal ? a : Lanes{} + kLnFloatMin;
    const Lanes k = (a * kLog2e + kRoundToInteger) - kRoundToInteger;
    const Lanes r = (a - k * kLn2High) - k * kLn2Low;
    Lanes series = Lanes{} + 1.0f / 5040.0f;
    for (const float coefficient : {1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f, 1.0f / 6.0f, 0.5f, 1.0f, 1.0f})
        series = series * r + coefficient;
    const LaneInts exponentBits = (__builtin_convertvector(k, LaneInts) + 127) << 23; // 2^k, k >= -126
    Lanes powerOfTwo;
    std::memcpy(&powerOfTwo, &exponentBits, sizeof powerOfTwo);
    Lanes erfc = t * (series * powerOfTwo);
    erfc = normal ? erfc : Lanes{}; // below FLT_MIN: flushed (and 0 for |x| = inf)
    // x Phi(x): x (1 - erfc(|x| / sqrt 2) / 2) for x >= 0 (+inf stays +inf), x erfc(|x| / sqrt 2) / 2 below.
    const Lanes upper = x * (1.0f - 0.5f * erfc);
    const Lanes lower = (0.5f * x) * erfc;
    const Lanes result = x >= 0 ? upper : lower; // NaN takes `lower`, NaN times anything
    std::memcpy(values, &result, sizeof result);
}

[[gnu::always_inline]] inline void geluAll(float* values, int64_t count)
{
    int64_t i = 0;
    for (; i + kLanes <= count; i += kLanes)
        geluSixteen(values + i);
    if (i < count) { // the tail in a zero-padded block, through the same lanes
        float tail[kLanes] = {};
        const std::size_t bytes = static_cast<std::size_t>(count - i) * sizeof(float);
        std::memcpy(tail, values + i, bytes);
        geluSixteen(tail);
        std::memcpy(values + i, tail, bytes);
    }
}

} // namespace

void portableGelu(float* values, int64_t count)
{
    geluAll(values, count);
}

#if defined(SCALESCOPE_FUSED_AVX512)
__attribute__((target("avx512f"))) void avx512Gelu(float* values, int64_t count)
{
    geluAll(values, count);
}
#else
void avx512Gelu(float* values, int64_t count)
{
    portableGelu(values, count);
}
#endif

void gelu(float* values, int64_t count)
{
    static const bool wide = scan_lanes::avx512Available();
    if (wide)
        avx512Gelu(values, count);
    else
        portableGelu(values, count);
}

} // namespace scalescope::fused_lanes
