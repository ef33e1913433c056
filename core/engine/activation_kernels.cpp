#include "engine/activation_kernels.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "engine/compute_threads.h"
#include "engine/output_scan_lanes.h"
#include "numerics/fp8.h"
#include "numerics/fp8_clip.h"
#include "numerics/half.h"
#include "numerics/mx.h"

namespace scalescope {
namespace {

float rowAmax(const float* row, int64_t features)
{
    return fp8::maxMagnitude(row, static_cast<std::size_t>(features));
}

// One row of scanOutput, in the widest lanes this CPU runs (output_scan_lanes.h).
OutputScan scanRow(const float* values, int64_t features, float maxAbs)
{
    return scan_lanes::row(values, features, maxAbs);
}

bool isRealRow(const std::vector<uint8_t>& isReal, int64_t row)
{
    return isReal.empty() || isReal[static_cast<std::size_t>(row)];
}

// Rows per parallelFor chunk: about 16 Ki values, so that a chunk outweighs handing it out.
int64_t rowGrain(int64_t features)
{
    return std::max<int64_t>(1, 16384 / std::max<int64_t>(features, 1));
}

// Group activations: every run of groupSize channels of a row gets s = max(amax(|run|) / 448,
// FLT_MIN), or MXFP8's power of two mx::activationScale(amax); a shorter last run uses the max of
// its own elements (as zero-padding would). Rows are spread over the compute threads.
std::vector<float> quantDequantGroups(const float* src, float* dst, int64_t rows, int64_t features, int64_t groupSize,
                                      bool mxfp8Scales)
{
    const int64_t runs = runsPerRow(features, groupSize);
    std::vector<float> scales(static_cast<std::size_t>(rows * runs));
    parallelFor(rows, rowGrain(features), [&](int64_t first, int64_t last) {
        for (int64_t row = first; row < last; ++row)
            for (int64_t run = 0; run < runs; ++run) {
                const int64_t begin = row * features + run * groupSize;
                const int64_t width = std::min(groupSize, features - run * groupSize);
                const float amax = rowAmax(src + begin, width);
                const float scale = mxfp8Scales ? mx::activationScale(amax) : std::max(amax / fp8::kE4M3Max, FLT_MIN);
                scales[static_cast<std::size_t>(row * runs + run)] = scale;
                fp8::quantDequantE4M3(src + begin, static_cast<std::size_t>(width), scale, dst + begin);
            }
    });
    return scales;
}

// A per-token or per-tensor `scheme` in one pass per row: the row's scale (per token from its own
// amax; per tensor one scale for all rows, from an amax pass before; static as given), then
// quantizeRow(row, scale) writes the row's quantized form. Rows are spread over the compute
// threads between GEMMs; returns each row's scale. Group schemes are the callers' to dispatch.
template <typename QuantizeRow>
std::vector<float> quantizeRowsInOnePass(const float* src, int64_t rows, int64_t features,
                                         ActivationQuantization scheme, float staticScale,
                                         const QuantizeRow& quantizeRow)
{
    std::vector<float> rowScales(static_cast<std::size_t>(rows), staticScale);
    const int64_t grain = rowGrain(features);
    if (scheme == ActivationQuantization::DynamicPerTensor) {
        std::vector<float> rowAmaxes(static_cast<std::size_t>(rows), 0.0f);
        parallelFor(rows, grain, [&](int64_t begin, int64_t end) {
            for (int64_t row = begin; row < end; ++row)
                rowAmaxes[static_cast<std::size_t>(row)] = rowAmax(src + row * features, features);
        });
        const float amax = rows > 0 ? *std::max_element(rowAmaxes.begin(), rowAmaxes.end()) : 0.0f;
        std::fill(rowScales.begin(), rowScales.end(), std::max(amax / fp8::kE4M3Max, FLT_MIN));
    }
    parallelFor(rows, grain, [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) {
            float& scale = rowScales[static_cast<std::size_t>(row)];
            if (scheme == ActivationQuantization::DynamicPerToken)
                scale = std::max(rowAmax(src + row * features, features) / fp8::kE4M3Max, FLT_MIN);
            quantizeRow(row, scale);
        }
    });
    return rowScales;
}

} // namespace

int64_t runsPerRow(int64_t features, int64_t groupSize)
{
    return groupSize > 0 ? (features + groupSize - 1) / groupSize : 1;
}

std::vector<float> quantDequantActivations(const float* src, float* dst, int64_t rows, int64_t features,
                                           ActivationQuantization scheme, float staticScale, int64_t groupSize,
                                           bool mxfp8Scales)
{
    if (scheme == ActivationQuantization::DynamicPerGroup)
        return quantDequantGroups(src, dst, rows, features, groupSize, mxfp8Scales);
    return quantizeRowsInOnePass(src, rows, features, scheme, staticScale, [&](int64_t row, float scale) {
        fp8::quantDequantE4M3(src + row * features, static_cast<std::size_t>(features), scale, dst + row * features);
    });
}

std::vector<float> quantizeActivationValues(const float* src, float* dst, int64_t rows, int64_t features,
                                            ActivationQuantization scheme, float staticScale)
{
    // Group scales vary along the reduced dimension, so they never factor out of a GEMM: callers
    // take the quantDequantActivations path for them (encoder_graph.cpp's dispatch).
    if (scheme == ActivationQuantization::DynamicPerGroup)
        throw std::logic_error("quantizeActivationValues: group activation scales do not factor out of the GEMM");
    return quantizeRowsInOnePass(src, rows, features, scheme, staticScale, [&](int64_t row, float scale) {
        fp8::quantizeToE4M3Values(src + row * features, static_cast<std::size_t>(features), scale, dst + row * features);
    });
}

std::vector<float> quantizeActivationsToBf16(const float* src, uint16_t* dst, int64_t rows, int64_t features,
                                             ActivationQuantization scheme, float staticScale)
{
    if (scheme == ActivationQuantization::DynamicPerGroup)
        throw std::logic_error("quantizeActivationsToBf16: group activation scales do not factor out of the GEMM");
    return quantizeRowsInOnePass(src, rows, features, scheme, staticScale, [&](int64_t row, float scale) {
        fp8::quantizeToE4M3Bf16(src + row * features, static_cast<std::size_t>(features), scale, dst + row * features);
    });
}

namespace {

// One row's clipped, flushed and subnormal counts against one scale per `runWidth` channels.
struct RowCounts {
    float amax = 0;
    int64_t clipped = 0, flushed = 0, subnormal = 0;
};

// A quantized value as the counts read it: float32 as is, or bfloat16 bits widened (exact).
inline float quantizedValue(const float* quantized, int64_t i)
{
    return quantized[i];
}
inline float quantizedValue(const uint16_t* quantized, int64_t i)
{
    const uint32_t widened = static_cast<uint32_t>(quantized[i]) << 16;
    float value;
    std::memcpy(&value, &widened, sizeof value);
    return value;
}

template <typename Quantized>
RowCounts countRow(const float* in, const Quantized* quantized, int64_t features, const float* scales, int64_t runWidth,
                   bool quantizedAreValues)
{
    // Read the codes back from the dequantized output d = q * s instead of rounding again:
    // q == 0 exactly when d == 0, and 0 < |q| < 2^-6 exactly when 0 < |d| < 2^-6 * s (s is a
    // normal float, so neither product underflows to zero or crosses the boundary). Counting
    // in plain int64 lanes lets the loop vectorise; it runs over every element of a compare.
    const float smallestNormal = 0.015625f; // 2^-6, E4M3's smallest normal
    // When `quantizedAreValues` they are the E4M3 values q themselves and the bound is 2^-6.
    RowCounts counts;
    for (int64_t begin = 0; begin < features; begin += runWidth) {
        const int64_t end = std::min(features, begin + runWidth);
        const float scale = scales[begin / runWidth];
        const float subnormalBound = quantizedAreValues ? smallestNormal : smallestNormal * scale;
        float amax = 0;
        int64_t clipped = 0, flushed = 0, subnormal = 0;
        for (int64_t i = begin; i < end; ++i) {
            const float v = in[i];
            const float d = std::fabs(quantizedValue(quantized, i));
            amax = std::max(amax, std::fabs(v));
            clipped += fp8::clipsE4M3(v, scale);
            flushed += (v != 0.0f) & (d == 0.0f);
            subnormal += (d != 0.0f) & (d < subnormalBound);
        }
        counts.amax = std::max(counts.amax, amax);
        counts.clipped += clipped;
        counts.flushed += flushed;
        counts.subnormal += subnormal;
    }
    return counts;
}

// Rows in chunks on the compute threads (this runs over every Linear input of a compare); the
// chunks' counts add and their maxima combine in any order to the same statistics.
template <typename Quantized>
ActivationStatistics countStatistics(const std::string& module, const float* src, const Quantized* quantized,
                                     int64_t rows, int64_t features, const std::vector<float>& scales,
                                     const std::vector<uint8_t>& isReal, int64_t groupSize, bool quantizedAreValues)
{
    const int64_t runs = runsPerRow(features, groupSize);
    const int64_t runWidth = groupSize > 0 ? groupSize : std::max<int64_t>(features, 1);
    const int64_t rowsPerChunk = std::max<int64_t>(1, 16384 / std::max<int64_t>(features, 1));
    const int64_t chunks = (rows + rowsPerChunk - 1) / rowsPerChunk;
    std::vector<ActivationStatistics> partial(static_cast<std::size_t>(std::max<int64_t>(chunks, 0)));
    parallelFor(chunks, 1, [&](int64_t begin, int64_t end) {
        for (int64_t chunk = begin; chunk < end; ++chunk) {
            ActivationStatistics& stats = partial[static_cast<std::size_t>(chunk)];
            for (int64_t row = chunk * rowsPerChunk; row < std::min(rows, (chunk + 1) * rowsPerChunk); ++row) {
                if (!isRealRow(isReal, row))
                    continue;
                const float* rowScales = scales.data() + row * runs;
                const RowCounts counts = countRow(src + row * features, quantized + row * features, features,
                                                  rowScales, runWidth, quantizedAreValues);
                for (int64_t run = 0; run < runs; ++run)
                    stats.inputScale = std::max(stats.inputScale, rowScales[run]);
                stats.amax = std::max(stats.amax, counts.amax);
                stats.elements += features;
                stats.clipped += counts.clipped;
                stats.flushedToZero += counts.flushed;
                stats.subnormal += counts.subnormal;
            }
        }
    });
    ActivationStatistics stats;
    stats.module = module;
    for (const ActivationStatistics& part : partial) {
        stats.inputScale = std::max(stats.inputScale, part.inputScale);
        stats.amax = std::max(stats.amax, part.amax);
        stats.elements += part.elements;
        stats.clipped += part.clipped;
        stats.flushedToZero += part.flushedToZero;
        stats.subnormal += part.subnormal;
    }
    return stats;
}

} // namespace

ActivationStatistics countActivationStatistics(const std::string& module, const float* src, const float* quantized,
                                               int64_t rows, int64_t features, const std::vector<float>& scales,
                                               const std::vector<uint8_t>& isReal, int64_t groupSize,
                                               bool quantizedAreValues)
{
    return countStatistics(module, src, quantized, rows, features, scales, isReal, groupSize, quantizedAreValues);
}

ActivationStatistics countActivationStatisticsBf16(const std::string& module, const float* src,
                                                   const uint16_t* quantizedValues, int64_t rows, int64_t features,
                                                   const std::vector<float>& scales, const std::vector<uint8_t>& isReal)
{
    return countStatistics(module, src, quantizedValues, rows, features, scales, isReal, /*groupSize=*/0,
                           /*quantizedAreValues=*/true);
}

float realRowsAmax(const float* src, int64_t rows, int64_t features, const std::vector<uint8_t>& isReal)
{
    float amax = 0;
    for (int64_t row = 0; row < rows; ++row)
        if (isRealRow(isReal, row))
            amax = std::max(amax, rowAmax(src + row * features, features));
    return amax;
}

OutputScan scanOutput(const float* src, int64_t rows, int64_t features, int64_t rowStride,
                      const std::vector<uint8_t>& isReal)
{
    // Chunks of rows on the compute threads (every module output passes here). Their results
    // combine in any order to the same scan: counts add, and the maximum leaves NaN out.
    const int64_t rowsPerChunk = std::max<int64_t>(1, 32768 / std::max<int64_t>(features, 1));
    const int64_t chunks = (rows + rowsPerChunk - 1) / rowsPerChunk;
    std::vector<OutputScan> partial(static_cast<std::size_t>(std::max<int64_t>(chunks, 0)));
    parallelFor(chunks, 1, [&](int64_t begin, int64_t end) {
        for (int64_t chunk = begin; chunk < end; ++chunk)
            partial[static_cast<std::size_t>(chunk)] = scanOutputRows(
                src, chunk * rowsPerChunk, std::min(rows, (chunk + 1) * rowsPerChunk), features, rowStride, isReal);
    });
    OutputScan scan;
    for (const OutputScan& part : partial)
        combineScans(scan, part);
    return scan;
}

OutputScan scanOutputRows(const float* src, int64_t begin, int64_t end, int64_t features, int64_t rowStride,
                          const std::vector<uint8_t>& isReal)
{
    OutputScan scan;
    for (int64_t row = begin; row < end; ++row) {
        if (!isRealRow(isReal, row))
            continue;
        const OutputScan rowScan = scanRow(src + row * rowStride, features, scan.maxAbs);
        scan.maxAbs = rowScan.maxAbs;
        scan.nonFinite += rowScan.nonFinite;
        scan.belowHalfNormal += rowScan.belowHalfNormal;
        scan.elements += rowScan.elements;
    }
    return scan;
}

void combineScans(OutputScan& into, const OutputScan& part)
{
    into.maxAbs = std::max(into.maxAbs, part.maxAbs); // neither holds NaN: scanRow leaves it out
    into.nonFinite += part.nonFinite;
    into.belowHalfNormal += part.belowHalfNormal;
    into.elements += part.elements;
}

bool rowHasNonFinite(const float* src, int64_t row, int64_t features, int64_t rowStride)
{
    const float* values = src + row * rowStride;
    for (int64_t i = 0; i < features; ++i)
        if (!std::isfinite(values[i]))
            return true;
    return false;
}

} // namespace scalescope
