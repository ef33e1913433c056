#pragma once
// The one clip rule of activation quantization (docs/ARCHITECTURE.md: |x / s| > 448, up to float
// rounding; fp8.h kE4M3ClipThreshold says why the threshold sits four float steps above 448): the
// engine's clip counts and the calibration lab's clip shares both take it.
#include <cmath>

#include "numerics/fp8.h"

namespace scalescope::fp8 {

// Whether value clips under scale: |value / scale|, divided as the quantizer divides, beyond the threshold.
inline bool clipsE4M3(float value, float scale)
{
    return std::fabs(value / scale) > kE4M3ClipThreshold;
}

} // namespace scalescope::fp8
