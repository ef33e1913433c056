#include "numerics/attention_fp8.h"

#include <algorithm>
#include <cmath>

#include "numerics/fp8.h"
#include "numerics/half.h"

namespace scalescope::attention_fp8 {
namespace {

float toHalf(float value) { return half::f16ToFloat(half::floatToF16(value)); }

} // namespace

SequenceCast castSequence(const float* x, float* out, int64_t rows, int64_t features, int64_t heads,
                          const uint8_t* real, float range, bool halfScale)
{
    SequenceCast cast;
    const int64_t width = heads > 0 ? features / heads : features;
    cast.headAmax.assign(static_cast<std::size_t>(heads), 0.0f);
    cast.values.assign(static_cast<std::size_t>(heads), 0);
    cast.zeros.assign(static_cast<std::size_t>(heads), 0);
    cast.subnormals.assign(static_cast<std::size_t>(heads), 0);
    auto isReal = [&](int64_t row) { return !real || real[row] != 0; };
    for (int64_t r = 0; r < rows; ++r) {
        if (!isReal(r))
            continue;
        const float* row = x + r * features;
        for (int64_t h = 0; h < heads; ++h) {
            float& amax = cast.headAmax[static_cast<std::size_t>(h)];
            for (int64_t c = h * width; c < (h + 1) * width; ++c)
                amax = std::max(amax, std::fabs(row[c])); // NaN is not taken, as torch's amax would
        }
    }
    float amax = 0.0f;
    for (float headAmax : cast.headAmax)
        amax = std::max(amax, headAmax);
    // torch: (|X|.amax() / RANGE).clamp(min=1e-5).to(float32): in half on a float16 device, where
    // the division and the clamp's bound are rounded to half.
    float scale = amax / range;
    float minimum = kMinimumScale;
    if (halfScale) {
        scale = toHalf(toHalf(amax) / range);
        minimum = toHalf(kMinimumScale);
    }
    cast.scale = std::max(scale, minimum);
    for (int64_t r = 0; r < rows; ++r) {
        const bool counted = isReal(r);
        const float* row = x + r * features;
        float* target = out + r * features;
        for (int64_t c = 0; c < features; ++c) {
            const float value = row[c];
            const float code = fp8::roundToE4M3(value / cast.scale);
            target[c] = code * cast.scale;
            if (!counted || width == 0)
                continue;
            const std::size_t h = static_cast<std::size_t>(std::min<int64_t>(c / width, heads - 1));
            ++cast.values[h];
            if (value != 0.0f && code == 0.0f)
                ++cast.zeros[h];
            else if (code != 0.0f && std::fabs(code) < kSmallestNormal)
                ++cast.subnormals[h];
        }
    }
    return cast;
}

} // namespace scalescope::attention_fp8
