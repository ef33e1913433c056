// The DL16 accumulation rule (dl16.h). Details docs/ARCHITECTURE.md leaves open are taken from
// fms-model-optimizer at commit 308643fb1e686c346eb6d0eb894598a64f2ded2f:
//   - fms_mo/custom_ext_kernels/triton_kernels.py, matmul_kernel: chunks are BLOCK_SIZE_K = 32
//     consecutive input channels from channel 0 (the last chunk is the remainder, masked to 0), and
//     each chunk's rounded result is added to one float32 accumulator in chunk order
//     (truncate_then_accumulate); round_and_trun adds the round bit 0x2000 to the bit pattern and
//     masks off 14 bits, then x >= 8581545984 -> +inf, x <= -8581545984 -> -inf, |x| < 4.66e-10 -> 0.
//   - fms_mo/modules/linear.py, LinearFuncFPxFwdBwd.forward: the flush compares the magnitude
//     (|v| < 0.0087890625) of the E4M3 values of x / s and of W / s_w, before descaling; the scales
//     are applied to the matmul's result as (result * x_scale) * w_scale, then the bias is added.
// Within a chunk the simulator's order is the GPU's dot product; here it is index order (the FP8
// products are exact in float32, so only the order of the additions is a choice).
#include "numerics/dl16.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace scalescope::dl16 {

void flushDl8InPlace(float* values, int64_t n)
{
    for (int64_t i = 0; i < n; ++i)
        values[i] = flushDl8(values[i]);
}

float roundToDl16(float value)
{
    if (std::isnan(value))
        return value;
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    bits = (bits + 0x2000u) & ~uint32_t(0x3FFF);
    float rounded;
    std::memcpy(&rounded, &bits, sizeof rounded);
    if (rounded >= kInfBound)
        return INFINITY;
    if (rounded <= -kInfBound)
        return -INFINITY;
    if (std::fabs(rounded) < kZeroBound)
        return 0.0f;
    return rounded;
}

float chunkedDot(const float* a, const float* b, int64_t n)
{
    float total = 0.0f;
    for (int64_t begin = 0; begin < n; begin += kChunk) {
        const int64_t end = begin + kChunk < n ? begin + kChunk : n;
        float chunk = 0.0f;
        for (int64_t k = begin; k < end; ++k)
            chunk += flushDl8(a[k]) * flushDl8(b[k]);
        total += roundToDl16(chunk);
    }
    return total;
}

void prepareWeight(const float* weightValues, int64_t out, int64_t in, float* weightT)
{
    for (int64_t o = 0; o < out; ++o)
        for (int64_t k = 0; k < in; ++k)
            weightT[k * out + o] = flushDl8(weightValues[o * in + k]);
}

void dl16Linear(const float* values, const float* rowScales, const float* weightT, const float* weightScales,
                const float* bias, int64_t in, int64_t out, int64_t begin, int64_t end, float* y)
{
    // Per row: each chunk's partial sums for every output channel at once, so the innermost loop
    // runs along a contiguous row of weightT (it vectorises), yet each (t, o) still adds its
    // products in index order, exactly as chunkedDot does.
    std::vector<float> row(static_cast<std::size_t>(in)), chunk(static_cast<std::size_t>(out)),
        total(static_cast<std::size_t>(out));
    for (int64_t t = begin; t < end; ++t) {
        const float* x = values + t * in;
        for (int64_t k = 0; k < in; ++k)
            row[static_cast<std::size_t>(k)] = flushDl8(x[k]);
        std::fill(total.begin(), total.end(), 0.0f);
        for (int64_t first = 0; first < in; first += kChunk) {
            const int64_t last = first + kChunk < in ? first + kChunk : in;
            std::fill(chunk.begin(), chunk.end(), 0.0f);
            float* c = chunk.data();
            for (int64_t k = first; k < last; ++k) {
                const float a = row[static_cast<std::size_t>(k)];
                const float* w = weightT + k * out;
                for (int64_t o = 0; o < out; ++o)
                    c[o] += a * w[o];
            }
            float* sum = total.data();
            for (int64_t o = 0; o < out; ++o)
                sum[o] += roundToDl16(c[o]);
        }
        float* dst = y + t * out;
        const float rowScale = rowScales[t];
        for (int64_t o = 0; o < out; ++o) {
            const float scaled = total[static_cast<std::size_t>(o)] * rowScale * weightScales[o];
            dst[o] = bias ? scaled + bias[o] : scaled;
        }
    }
}

} // namespace scalescope::dl16
