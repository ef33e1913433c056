#include "engine/output_scan_lanes.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "numerics/half.h"

// GCC only, as common/cpu_clones.h: a function compiled for AVX-512 beside a baseline binary,
// entered only after the CPU said it runs AVX-512F.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(SCALESCOPE_NO_CPU_CLONES)
#define SCALESCOPE_SCAN_AVX512 1
#endif

namespace scalescope::scan_lanes {
namespace {

// The tail after the lanes, and the whole row where there are none: this defines the result.
OutputScan finishRow(const float* values, int64_t begin, int64_t features, float maxAbs, OutputScan scan)
{
    for (int64_t i = begin; i < features; ++i) {
        const float magnitude = std::fabs(values[i]);
        scan.nonFinite += std::isfinite(magnitude) ? 0 : 1;
        scan.belowHalfNormal += (magnitude > 0.0f && magnitude < half::kHalfMinNormal) ? 1 : 0;
        maxAbs = magnitude > maxAbs ? magnitude : maxAbs; // false for NaN: NaN is left out
    }
    scan.maxAbs = maxAbs;
    scan.elements = features;
    return scan;
}

} // namespace

OutputScan portableRow(const float* values, int64_t features, float maxAbs)
{
    OutputScan scan;
    int64_t i = 0;
#if defined(__SSE2__)
    const __m128 magnitudeBits = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));
    const __m128 largest = _mm_set1_ps(FLT_MAX), zero = _mm_setzero_ps(), minNormal = _mm_set1_ps(half::kHalfMinNormal);
    __m128 maxima = _mm_set1_ps(maxAbs);
    __m128i nonFinite = _mm_setzero_si128(), belowNormal = _mm_setzero_si128();
    for (; i + 4 <= features; i += 4) {
        const __m128 magnitude = _mm_and_ps(_mm_loadu_ps(values + i), magnitudeBits);
        maxima = _mm_max_ps(magnitude, maxima); // the second operand when either is NaN: NaN never wins
        // Comparison lanes are all ones (-1) where true: subtracting them counts.
        nonFinite = _mm_sub_epi32(nonFinite, _mm_castps_si128(_mm_cmpnle_ps(magnitude, largest)));
        const __m128 below = _mm_and_ps(_mm_cmpgt_ps(magnitude, zero), _mm_cmplt_ps(magnitude, minNormal));
        belowNormal = _mm_sub_epi32(belowNormal, _mm_castps_si128(below));
    }
    alignas(16) float laneMaxima[4];
    alignas(16) int32_t laneNonFinite[4], laneBelow[4];
    _mm_store_ps(laneMaxima, maxima);
    _mm_store_si128(reinterpret_cast<__m128i*>(laneNonFinite), nonFinite);
    _mm_store_si128(reinterpret_cast<__m128i*>(laneBelow), belowNormal);
    for (int lane = 0; lane < 4; ++lane) {
        maxAbs = std::max(maxAbs, laneMaxima[lane]);
        scan.nonFinite += laneNonFinite[lane];
        scan.belowHalfNormal += laneBelow[lane];
    }
#endif
    return finishRow(values, i, features, maxAbs, scan);
}

#if defined(SCALESCOPE_SCAN_AVX512)

bool avx512Available()
{
    return __builtin_cpu_supports("avx512f");
}

namespace {
typedef float Lanes16 __attribute__((vector_size(64)));
typedef int32_t LaneInts16 __attribute__((vector_size(64)));
} // namespace

// Selects, never a comparison's result used as integers: AVX-512F alone has no instruction turning
// a comparison mask into lanes (that is AVX-512DQ), and GCC then goes lane by lane.
__attribute__((target("avx512f"))) OutputScan avx512Row(const float* values, int64_t features, float maxAbs)
{
    OutputScan scan;
    int64_t i = 0;
    Lanes16 maxima = Lanes16{} + maxAbs;
    LaneInts16 nonFinite = {}, belowNormal = {};
    const Lanes16 largest = Lanes16{} + FLT_MAX, minNormal = Lanes16{} + half::kHalfMinNormal, zero = {};
    const LaneInts16 one = LaneInts16{} + 1, none = {};
    for (; i + 16 <= features; i += 16) {
        LaneInts16 bits;
        std::memcpy(&bits, values + i, sizeof bits);
        bits &= 0x7fffffff; // |x|: the sign bit cleared
        Lanes16 magnitude;
        std::memcpy(&magnitude, &bits, sizeof magnitude);
        maxima = magnitude > maxima ? magnitude : maxima;  // false for NaN: NaN never wins
        nonFinite += magnitude <= largest ? none : one;    // NaN is not <= FLT_MAX either
        belowNormal += magnitude < minNormal ? one : none; // 0 <= |x| < 2^-14 ...
        belowNormal -= magnitude == zero ? one : none;     // ... less the zeros
    }
    for (int lane = 0; lane < 16; ++lane) {
        maxAbs = std::max(maxAbs, maxima[lane]);
        scan.nonFinite += nonFinite[lane];
        scan.belowHalfNormal += belowNormal[lane];
    }
    return finishRow(values, i, features, maxAbs, scan);
}

#else

bool avx512Available()
{
    return false;
}

OutputScan avx512Row(const float* values, int64_t features, float maxAbs)
{
    return portableRow(values, features, maxAbs);
}

#endif

OutputScan row(const float* values, int64_t features, float maxAbs)
{
    static const bool wide = avx512Available();
    return wide ? avx512Row(values, features, maxAbs) : portableRow(values, features, maxAbs);
}

} // namespace scalescope::scan_lanes
