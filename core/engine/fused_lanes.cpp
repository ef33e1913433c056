#include "engine/fused_lanes.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "engine/output_scan_lanes.h"

// GCC only, as common/cpu_clones.h and output_scan_lanes.cpp: the AVX-512 and AVX2 versions are
// compiled beside a baseline binary and entered only after the CPU said it runs them.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(SCALESCOPE_NO_CPU_CLONES)
#define SCALESCOPE_FUSED_WIDE 1
#endif

namespace scalescope::fused_lanes {
namespace {

// Every kernel works on blocks of 16 floats, as one vector of 16 lanes (AVX-512), two of 8 (AVX2)
// or four of 4 (SSE2, the portable one): a vector type the instruction set holds in one register,
// so that the compiler never splits an operation lane by lane. A float's lane in the block is the
// same in every version, and so is the order of every sum (only FMA tells the versions apart).
constexpr int64_t kBlock = 16;
typedef float Float16 __attribute__((vector_size(64)));
typedef int32_t Int16 __attribute__((vector_size(64)));
typedef float Float8 __attribute__((vector_size(32)));
typedef int32_t Int8 __attribute__((vector_size(32)));
typedef float Float4 __attribute__((vector_size(16)));
typedef int32_t Int4 __attribute__((vector_size(16)));

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
template <typename F, typename I>
[[gnu::always_inline]] inline void expNonPositive(F& a)
{
    const I normal = a >= kLnFloatMin; // false for NaN: no NaN reaches the integer conversion
    const I nan = a != a;
    const F exponent = normal ? a : F{} + kLnFloatMin;
    const F k = (exponent * kLog2e + kRoundToInteger) - kRoundToInteger;
    const F r = (exponent - k * kLn2High) - k * kLn2Low;
    F series = F{} + 1.0f / 5040.0f;
    for (const float coefficient : {1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f, 1.0f / 6.0f, 0.5f, 1.0f, 1.0f})
        series = series * r + coefficient;
    const I exponentBits = (__builtin_convertvector(k, I) + 127) << 23; // 2^k, k >= -126
    F powerOfTwo;
    std::memcpy(&powerOfTwo, &exponentBits, sizeof powerOfTwo);
    const F power = series * powerOfTwo;
    a = normal ? power : nan ? a : F{};
}

// GELU on `n` vectors of values in place, each step on all of them before the next (independent
// chains, so that the long one of each value overlaps the others'). Every step works on each lane alone.
template <typename F, typename I, int n>
[[gnu::always_inline]] inline void geluVectors(float* values)
{
    F x[n], t[n], fit[n], power[n];
    std::memcpy(x, values, sizeof x);
    for (int v = 0; v < n; ++v) {
        const F z = (x[v] < 0 ? -x[v] : x[v]) * kInverseSqrt2; // -x for x < 0: -0 and NaN pass as they are
        t[v] = 1.0f / (1.0f + 0.5f * z);
        fit[v] = F{} + kErfcFit[9];
        power[v] = -(z * z);
    }
    for (int i = 8; i >= 0; --i)
        for (int v = 0; v < n; ++v)
            fit[v] = fit[v] * t[v] + kErfcFit[i];
    for (int v = 0; v < n; ++v) {
        power[v] = fit[v] + power[v]; // the exponent: <= 0 (0 at x = 0), -inf for |x| = inf, NaN for NaN
        expNonPositive<F, I>(power[v]);
        const F erfc = t[v] * power[v]; // below FLT_MIN: flushed (and 0 for |x| = inf)
        // x Phi(x): x (1 - erfc(|x| / sqrt 2) / 2) for x >= 0 (+inf stays +inf), x erfc(|x| / sqrt 2) / 2 below.
        const F upper = x[v] * (1.0f - 0.5f * erfc);
        const F lower = (0.5f * x[v]) * erfc;
        x[v] = x[v] >= 0 ? upper : lower; // NaN takes `lower`, NaN times anything
    }
    std::memcpy(values, x, sizeof x);
}

template <typename F, typename I>
[[gnu::always_inline]] inline void geluAll(float* values, int64_t count)
{
    constexpr int64_t width = sizeof(F) / sizeof(float), group = 2 * width;
    int64_t i = 0;
    for (; i + group <= count; i += group)
        geluVectors<F, I, 2>(values + i);
    for (; i + width <= count; i += width)
        geluVectors<F, I, 1>(values + i);
    if (i < count) { // the tail in a zero-padded vector, through the same lanes
        float tail[width] = {};
        const std::size_t bytes = static_cast<std::size_t>(count - i) * sizeof(float);
        std::memcpy(tail, values + i, bytes);
        geluVectors<F, I, 1>(tail);
        std::memcpy(values + i, tail, bytes);
    }
}

// `count` floats (at most a vector's, possibly none) into a vector; the lanes past them hold `beyond`.
template <typename F>
[[gnu::always_inline]] inline void loadLanes(F& lanes, const float* from, int64_t count, float beyond)
{
    if (count == static_cast<int64_t>(sizeof(F) / sizeof(float))) {
        std::memcpy(&lanes, from, sizeof lanes);
        return;
    }
    lanes = F{} + beyond;
    if (count > 0) // a vector wholly past the row's end reads nothing
        std::memcpy(&lanes, from, static_cast<std::size_t>(count) * sizeof(float));
}

template <typename F>
[[gnu::always_inline]] inline void storeLanes(float* to, const F& lanes, int64_t count)
{
    if (count == static_cast<int64_t>(sizeof(F) / sizeof(float)))
        std::memcpy(to, &lanes, sizeof lanes);
    else if (count > 0)
        std::memcpy(to, &lanes, static_cast<std::size_t>(count) * sizeof(float));
}

// The sum of a block's 16 lane totals (held as `parts` vectors), in lane order.
template <typename F, int64_t parts>
[[gnu::always_inline]] inline float laneTotal(const F (&totals)[parts])
{
    float total = 0.0f;
    for (int64_t p = 0; p < parts; ++p)
        for (int64_t lane = 0; lane < static_cast<int64_t>(sizeof(F) / sizeof(float)); ++lane)
            total += totals[p][lane];
    return total;
}

// How many of a vector's `width` lanes starting at `at` lie in a row of `rowWidth`: 0 to width.
inline int64_t lanesInRow(int64_t at, int64_t width, int64_t rowWidth)
{
    return at >= rowWidth ? 0 : std::min(width, rowWidth - at);
}

// One row of softmax(mask + scale * scores) in place, in three passes over the row while it is in
// cache: the masked, scaled scores and their maximum; e^(s - max) and its sum; each times 1 / sum.
// A lane past the row's end is a score of -inf: it is never the maximum and adds e^-inf = 0. Sums
// run in each of a block's 16 lanes, then across them in lane order: the same in every version.
template <typename F, typename I>
[[gnu::always_inline]] inline void maskedSoftmaxRow(float* row, int64_t rowWidth, float scale, const float* mask)
{
    constexpr int64_t width = sizeof(F) / sizeof(float), parts = kBlock / width;
    const float negativeInfinity = -std::numeric_limits<float>::infinity();
    F maxima[parts], sums[parts];
    for (int64_t p = 0; p < parts; ++p) {
        maxima[p] = F{} + negativeInfinity;
        sums[p] = F{};
    }
    for (int64_t block = 0; block < rowWidth; block += kBlock)
        for (int64_t p = 0, at = block; p < parts; ++p, at += width) {
            const int64_t count = lanesInRow(at, width, rowWidth);
            F scores, masks;
            loadLanes(scores, row + at, count, 0.0f);
            loadLanes(masks, mask + at, count, negativeInfinity);
            const F masked = masks + scores * scale;
            maxima[p] = masked > maxima[p] ? masked : maxima[p]; // NaN never wins; it reaches the sum below
            storeLanes(row + at, masked, count);
        }
    float maximum = negativeInfinity;
    for (int64_t p = 0; p < parts; ++p)
        for (int64_t lane = 0; lane < width; ++lane)
            maximum = maxima[p][lane] > maximum ? maxima[p][lane] : maximum;
    for (int64_t block = 0; block < rowWidth; block += kBlock)
        for (int64_t p = 0, at = block; p < parts; ++p, at += width) {
            const int64_t count = lanesInRow(at, width, rowWidth);
            F power;
            loadLanes(power, row + at, count, negativeInfinity);
            power = power - maximum; // <= 0; NaN when the row holds a NaN, or +inf (inf - inf)
            expNonPositive<F, I>(power);
            sums[p] = sums[p] + power;
            storeLanes(row + at, power, count);
        }
    const float inverse = 1.0f / laneTotal(sums);
    for (int64_t at = 0; at < rowWidth; at += width) {
        const int64_t count = lanesInRow(at, width, rowWidth);
        F power;
        loadLanes(power, row + at, count, 0.0f);
        storeLanes(row + at, power * inverse, count);
    }
}

template <typename F, typename I>
[[gnu::always_inline]] inline void maskedSoftmaxAll(float* scores, int64_t rows, int64_t width, float scale,
                                                    const float* mask)
{
    for (int64_t row = 0; row < rows; ++row)
        maskedSoftmaxRow<F, I>(scores + row * width, width, scale, mask);
}

// LayerNorm(x + residual) of one row into `out`, in three passes over the row while it is in
// cache: the sum (written to out) and its total; the squared deviations' total; the normalized,
// scaled and shifted values. Totals in each of a block's 16 lanes, then across them in lane order.
template <typename F>
[[gnu::always_inline]] inline void addLayerNormRow(const float* x, const float* residual, const float* gamma,
                                                   const float* beta, float epsilon, int64_t rowWidth, float* out)
{
    constexpr int64_t width = sizeof(F) / sizeof(float), parts = kBlock / width;
    F totals[parts], squares[parts];
    for (int64_t p = 0; p < parts; ++p)
        totals[p] = squares[p] = F{};
    for (int64_t block = 0; block < rowWidth; block += kBlock)
        for (int64_t p = 0, at = block; p < parts; ++p, at += width) {
            const int64_t count = lanesInRow(at, width, rowWidth);
            F a, b;
            loadLanes(a, x + at, count, 0.0f);
            loadLanes(b, residual + at, count, 0.0f);
            const F sum = a + b;
            totals[p] = totals[p] + sum;
            storeLanes(out + at, sum, count);
        }
    const float mean = laneTotal(totals) / static_cast<float>(rowWidth);
    for (int64_t block = 0; block < rowWidth; block += kBlock)
        for (int64_t p = 0, at = block; p < parts; ++p, at += width) {
            const int64_t count = lanesInRow(at, width, rowWidth);
            F sum;
            loadLanes(sum, out + at, count, mean); // lanes past the row deviate by 0
            const F deviation = sum - mean;
            squares[p] = squares[p] + deviation * deviation;
        }
    const float inverseDeviation = 1.0f / std::sqrt(laneTotal(squares) / static_cast<float>(rowWidth) + epsilon);
    for (int64_t at = 0; at < rowWidth; at += width) {
        const int64_t count = lanesInRow(at, width, rowWidth);
        F sum, scale, shift;
        loadLanes(sum, out + at, count, 0.0f);
        loadLanes(scale, gamma + at, count, 0.0f);
        loadLanes(shift, beta + at, count, 0.0f);
        storeLanes(out + at, (sum - mean) * inverseDeviation * scale + shift, count);
    }
}

template <typename F>
[[gnu::always_inline]] inline void addLayerNormAll(const float* x, const float* residual, const float* gamma,
                                                   const float* beta, float epsilon, int64_t rows, int64_t width,
                                                   float* out)
{
    for (int64_t row = 0; row < rows; ++row)
        addLayerNormRow<F>(x + row * width, residual + row * width, gamma, beta, epsilon, width, out + row * width);
}

// The widest version this CPU runs, decided once.
enum class Width { Portable, Avx2, Avx512 };
Width widest()
{
    static const Width width = scan_lanes::avx512Available() ? Width::Avx512
                               : avx2Available()              ? Width::Avx2
                                                              : Width::Portable;
    return width;
}

} // namespace

void portableGelu(float* values, int64_t count)
{
    geluAll<Float4, Int4>(values, count);
}

void portableMaskedSoftmax(float* scores, int64_t rows, int64_t width, float scale, const float* mask)
{
    maskedSoftmaxAll<Float4, Int4>(scores, rows, width, scale, mask);
}

void portableAddLayerNorm(const float* x, const float* residual, const float* gamma, const float* beta, float epsilon,
                          int64_t rows, int64_t width, float* out)
{
    addLayerNormAll<Float4>(x, residual, gamma, beta, epsilon, rows, width, out);
}

#if defined(SCALESCOPE_FUSED_WIDE)
bool avx2Available()
{
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

__attribute__((target("avx2,fma"))) void avx2Gelu(float* values, int64_t count)
{
    geluAll<Float8, Int8>(values, count);
}

__attribute__((target("avx2,fma"))) void avx2MaskedSoftmax(float* scores, int64_t rows, int64_t width, float scale,
                                                      const float* mask)
{
    maskedSoftmaxAll<Float8, Int8>(scores, rows, width, scale, mask);
}

__attribute__((target("avx2,fma"))) void avx2AddLayerNorm(const float* x, const float* residual, const float* gamma,
                                                         const float* beta, float epsilon, int64_t rows, int64_t width,
                                                         float* out)
{
    addLayerNormAll<Float8>(x, residual, gamma, beta, epsilon, rows, width, out);
}

__attribute__((target("avx512f"))) void avx512AddLayerNorm(const float* x, const float* residual, const float* gamma,
                                                           const float* beta, float epsilon, int64_t rows, int64_t width,
                                                           float* out)
{
    addLayerNormAll<Float16>(x, residual, gamma, beta, epsilon, rows, width, out);
}

__attribute__((target("avx512f"))) void avx512Gelu(float* values, int64_t count)
{
    geluAll<Float16, Int16>(values, count);
}

__attribute__((target("avx512f"))) void avx512MaskedSoftmax(float* scores, int64_t rows, int64_t width, float scale,
                                                            const float* mask)
{
    maskedSoftmaxAll<Float16, Int16>(scores, rows, width, scale, mask);
}
#else
bool avx2Available()
{
    return false;
}
void avx2Gelu(float* values, int64_t count)
{
    portableGelu(values, count);
}
void avx2MaskedSoftmax(float* scores, int64_t rows, int64_t width, float scale, const float* mask)
{
    portableMaskedSoftmax(scores, rows, width, scale, mask);
}
void avx512Gelu(float* values, int64_t count)
{
    portableGelu(values, count);
}
void avx2AddLayerNorm(const float* x, const float* residual, const float* gamma, const float* beta, float epsilon,
                      int64_t rows, int64_t width, float* out)
{
    portableAddLayerNorm(x, residual, gamma, beta, epsilon, rows, width, out);
}
void avx512AddLayerNorm(const float* x, const float* residual, const float* gamma, const float* beta, float epsilon,
                        int64_t rows, int64_t width, float* out)
{
    portableAddLayerNorm(x, residual, gamma, beta, epsilon, rows, width, out);
}
void avx512MaskedSoftmax(float* scores, int64_t rows, int64_t width, float scale, const float* mask)
{
    portableMaskedSoftmax(scores, rows, width, scale, mask);
}
#endif

void gelu(float* values, int64_t count)
{
    switch (widest()) {
    case Width::Avx512:
        return avx512Gelu(values, count);
    case Width::Avx2:
        return avx2Gelu(values, count);
    case Width::Portable:
        break;
    }
    portableGelu(values, count);
}

void maskedSoftmax(float* scores, int64_t rows, int64_t width, float scale, const float* mask)
{
    switch (widest()) {
    case Width::Avx512:
        return avx512MaskedSoftmax(scores, rows, width, scale, mask);
    case Width::Avx2:
        return avx2MaskedSoftmax(scores, rows, width, scale, mask);
    case Width::Portable:
        break;
    }
    portableMaskedSoftmax(scores, rows, width, scale, mask);
}

void addLayerNorm(const float* x, const float* residual, const float* gamma, const float* beta, float epsilon,
                  int64_t rows, int64_t width, float* out)
{
    switch (widest()) {
    case Width::Avx512:
        return avx512AddLayerNorm(x, residual, gamma, beta, epsilon, rows, width, out);
    case Width::Avx2:
        return avx2AddLayerNorm(x, residual, gamma, beta, epsilon, rows, width, out);
    case Width::Portable:
        break;
    }
    portableAddLayerNorm(x, residual, gamma, beta, epsilon, rows, width, out);
}

} // namespace scalescope::fused_lanes
