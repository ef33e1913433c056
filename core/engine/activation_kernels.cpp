#include "engine/activation_kernels.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "numerics/fp8.h"

namespace scalescope {
namespace {

float rowAmax(const float* row, int64_t features)
{
    float amax = 0;
    for (int64_t i = 0; i < features; ++i)
        amax = std::max(amax, std::fabs(row[i]));
    return amax;
}

bool isRealRow(const std::vector<uint8_t>& isReal, int64_t row)
{
    return isReal.empty() || isReal[static_cast<std::size_t>(row)];
}

// The scale of each row for `scheme` (the same for every row of a per-tensor scheme).
std::vector<float> activationScales(const float* src, int64_t rows, int64_t features, ActivationQuantization scheme,
                                    float staticScale)
{
    std::vector<float> rowScales(static_cast<std::size_t>(rows), staticScale);
    if (scheme == ActivationQuantization::DynamicPerToken) {
        for (int64_t row = 0; row < rows; ++row)
            rowScales[static_cast<std::size_t>(row)] =
                std::max(rowAmax(src + row * features, features) / fp8::kE4M3Max, FLT_MIN);
    } else if (scheme == ActivationQuantization::DynamicPerTensor) {
        float amax = 0;
        for (int64_t row = 0; row < rows; ++row)
            amax = std::max(amax, rowAmax(src + row * features, features));
        std::fill(rowScales.begin(), rowScales.end(), std::max(amax / fp8::kE4M3Max, FLT_MIN));
    }
    return rowScales;
}

using RowQuantizer = void (*)(float*, std::size_t, float);

std::vector<float> quantizeRows(const float* src, float* dst, int64_t rows, int64_t features,
                                ActivationQuantization scheme, float staticScale, RowQuantizer quantizeRow)
{
    const std::vector<float> rowScales = activationScales(src, rows, features, scheme, staticScale);
    if (rows > 0 && dst != src)
        std::memcpy(dst, src, static_cast<std::size_t>(rows * features) * sizeof(float));
    for (int64_t row = 0; row < rows; ++row)
        quantizeRow(dst + row * features, static_cast<std::size_t>(features), rowScales[static_cast<std::size_t>(row)]);
    return rowScales;
}

} // namespace

std::vector<float> quantDequantActivations(const float* src, float* dst, int64_t rows, int64_t features,
                                           ActivationQuantization scheme, float staticScale)
{
    return quantizeRows(src, dst, rows, features, scheme, staticScale, fp8::quantDequantE4M3);
}

std::vector<float> quantizeActivationValues(const float* src, float* dst, int64_t rows, int64_t features,
                                            ActivationQuantization scheme, float staticScale)
{
    return quantizeRows(src, dst, rows, features, scheme, staticScale, fp8::quantizeToE4M3Values);
}

ActivationStatistics countActivationStatistics(const std::string& module, const float* src, const float* quantized,
                                               int64_t rows, int64_t features, const std::vector<float>& rowScales,
                                               const std::vector<uint8_t>& isReal, bool quantizedAreValues)
{
    // Read the codes back from the dequantized output d = q * s instead of rounding again:
    // q == 0 exactly when d == 0, and 0 < |q| < 2^-6 exactly when 0 < |d| < 2^-6 * s (s is a
    // normal float, so neither product underflows to zero or crosses the boundary). Counting
    // in plain int64 lanes lets the loop vectorise; it runs over every element of a compare.
    ActivationStatistics stats;
    stats.module = module;
    const float smallestNormal = 0.015625f; // 2^-6, E4M3's smallest normal
    for (int64_t row = 0; row < rows; ++row) {
        if (!isRealRow(isReal, row))
            continue;
        const float scale = rowScales[static_cast<std::size_t>(row)];
        const float subnormalBound = quantizedAreValues ? smallestNormal : smallestNormal * scale;
        const float* in = src + row * features;
        const float* rowQuantized = quantized + row * features;
        float amax = 0;
        int64_t clipped = 0, flushed = 0, subnormal = 0;
        for (int64_t i = 0; i < features; ++i) {
            const float v = in[i];
            const float d = std::fabs(rowQuantized[i]);
            amax = std::max(amax, std::fabs(v));
            clipped += std::fabs(v / scale) > fp8::kE4M3Max;
            flushed += (v != 0.0f) & (d == 0.0f);
            subnormal += (d != 0.0f) & (d < subnormalBound);
        }
        stats.inputScale = std::max(stats.inputScale, scale);
        stats.amax = std::max(stats.amax, amax);
        stats.elements += features;
        stats.clipped += clipped;
        stats.flushedToZero += flushed;
        stats.subnormal += subnormal;
    }
    return stats;
}

float realRowsAmax(const float* src, int64_t rows, int64_t features, const std::vector<uint8_t>& isReal)
{
    float amax = 0;
    for (int64_t row = 0; row < rows; ++row)
        if (isRealRow(isReal, row))
            amax = std::max(amax, rowAmax(src + row * features, features));
    return amax;
}

} // namespace scalescope
