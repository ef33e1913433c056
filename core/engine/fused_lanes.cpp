#include "engine/fused_lanes.h"

#include <algorithm>
#include <cstring>
#include <limits>

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

// e^a in place, lane by lane, for a <= 0: 0 below ln(FLT_MIN) (and for -inf), NaN for NaN.
[[gnu::always_inline]] inline void expNonPositive(Lanes& a)
{
    const LaneInts normal = a >= kLnFloatMin; // false for NaN: no NaN reaches the integer conversion
    const LaneInts nan = a != a;
    const Lanes exponent = normal ? a : Lanes{} + kLnFloatMin;
    const Lanes k = (exponent * kLog2e + kRoundToInteger) - kRoundToInteger;
    const Lanes r = (exponent - k * kLn2High) - k * kLn2Low;
    Lanes series = Lanes{} + 1.0f / 5040.0f;
    for (const float coefficient : {1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f, 1.0f / 6.0f, 0.5f, 1.0f, 1.0f})
        series = series * r + coefficient;
    const LaneInts exponentBits = (__builtin_convertvector(k, LaneInts) + 127) << 23; // 2^k, k >= -126
    Lanes powerOfTwo;
    std::memcpy(&powerOfTwo, &exponentBits, sizeof powerOfTwo);
    const Lanes power = series * powerOfTwo;
    a = normal ? power : nan ? a : Lanes{};
}

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
    Lanes power = fit - z * z; // the exponent: <= 0 (it is 0 at z = 0), -inf for |x| = inf, NaN for NaN
    expNonPositive(power);
    const Lanes erfc = t * power; // below FLT_MIN: flushed (and 0 for |x| = inf)
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

// `count` (1 to 16) floats into lanes; the lanes past them hold `beyond`.
[[gnu::always_inline]] inline void loadLanes(Lanes& lanes, const float* from, int64_t count, float beyond)
{
    if (count == kLanes) {
        std::memcpy(&lanes, from, sizeof lanes);
        return;
    }
    lanes = Lanes{} + beyond;
    std::memcpy(&lanes, from, static_cast<std::size_t>(count) * sizeof(float));
}

[[gnu::always_inline]] inline void storeLanes(float* to, const Lanes& lanes, int64_t count)
{
    std::memcpy(to, &lanes, count == kLanes ? sizeof lanes : static_cast<std::size_t>(count) * sizeof(float));
}

// One row of softmax(mask + scale * scores) in place, in three passes over the row while it is in
// cache: the masked, scaled scores and their maximum; e^(s - max) and its sum; each divided by the
// sum. A lane past the row's end is a score of -inf: it is never the maximum and adds e^-inf = 0.
// Sums run in each of the 16 lanes, then across them in a fixed order: the same on every width.
[[gnu::always_inline]] inline void maskedSoftmaxRow(float* row, int64_t width, float scale, const float* mask)
{
    const float negativeInfinity = -std::numeric_limits<float>::infinity();
    Lanes maxima = Lanes{} + negativeInfinity;
    for (int64_t at = 0; at < width; at += kLanes) {
        const int64_t count = std::min(kLanes, width - at);
        Lanes scores, masks;
        loadLanes(scores, row + at, count, 0.0f);
        loadLanes(masks, mask + at, count, negativeInfinity);
        const Lanes masked = masks + scores * scale;
        maxima = masked > maxima ? masked : maxima; // NaN never wins here; it reaches the sum below
        storeLanes(row + at, masked, count);
    }
    float maximum = negativeInfinity;
    for (int64_t lane = 0; lane < kLanes; ++lane)
        maximum = maxima[lane] > maximum ? maxima[lane] : maximum;
    Lanes sums = {};
    for (int64_t at = 0; at < width; at += kLanes) {
        const int64_t count = std::min(kLanes, width - at);
        Lanes power;
        loadLanes(power, row + at, count, negativeInfinity);
        power = power - maximum; // <= 0; NaN when the row holds a NaN, or +inf (inf - inf)
        expNonPositive(power);
        sums = sums + power;
        storeLanes(row + at, power, count);
    }
    float sum = 0.0f;
    for (int64_t lane = 0; lane < kLanes; ++lane)
        sum += sums[lane];
    for (int64_t at = 0; at < width; at += kLanes) {
        const int64_t count = std::min(kLanes, width - at);
        Lanes power;
        loadLanes(power, row + at, count, 0.0f);
        storeLanes(row + at, power / sum, count);
    }
}

[[gnu::always_inline]] inline void maskedSoftmaxAll(float* scores, int64_t rows, int64_t width, float scale,
                                                    const float* mask)
{
    for (int64_t row = 0; row < rows; ++row)
        maskedSoftmaxRow(scores + row * width, width, scale, mask);
}

} // namespace

void portableGelu(float* values, int64_t count)
{
    geluAll(values, count);
}

void portableMaskedSoftmax(float* scores, int64_t rows, int64_t width, float scale, const float* mask)
{
    maskedSoftmaxAll(scores, rows, width, scale, mask);
}

#if defined(SCALESCOPE_FUSED_AVX512)
__attribute__((target("avx512f"))) void avx512Gelu(float* values, int64_t count)
{
    geluAll(values, count);
}
__attribute__((target("avx512f"))) void avx512MaskedSoftmax(float* scores, int64_t rows, int64_t width, float scale,
                                                            const float* mask)
{
    maskedSoftmaxAll(scores, rows, width, scale, mask);
}
#else
void avx512Gelu(float* values, int64_t count)
{
    portableGelu(values, count);
}
void avx512MaskedSoftmax(float* scores, int64_t rows, int64_t width, float scale, const float* mask)
{
    portableMaskedSoftmax(scores, rows, width, scale, mask);
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

void maskedSoftmax(float* scores, int64_t rows, int64_t width, float scale, const float* mask)
{
    static const bool wide = scan_lanes::avx512Available();
    if (wide)
        avx512MaskedSoftmax(scores, rows, width, scale, mask);
    else
        portableMaskedSoftmax(scores, rows, width, scale, mask);
}

} // namespace scalescope::fused_lanes
