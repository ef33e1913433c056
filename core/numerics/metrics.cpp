#include "numerics/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace scalescope {

void ErrorAccumulator::add(const float* x, const float* reference, std::size_t n)
{
    // A full comparison feeds ~10^8 values through here, so the inner loop works on eight float
    // lanes the compiler vectorises, over blocks short enough (1024 values) that float sums stay
    // accurate to ~1e-6 relative; the blocks are then added up in double.
    constexpr std::size_t kLanes = 8;
    constexpr std::size_t kBlock = 1024;
    for (std::size_t begin = 0; begin < n; begin += kBlock) {
        const std::size_t end = std::min(n, begin + kBlock);
        float ref2[kLanes] = {}, x2[kLanes] = {}, dot[kLanes] = {}, err2[kLanes] = {}, maxAbs[kLanes] = {};
        std::size_t i = begin;
        for (; i + kLanes <= end; i += kLanes) {
            for (std::size_t lane = 0; lane < kLanes; ++lane) {
                const float r = reference[i + lane];
                const float v = x[i + lane];
                const float e = r - v;
                ref2[lane] += r * r;
                x2[lane] += v * v;
                dot[lane] += r * v;
                err2[lane] += e * e;
                maxAbs[lane] = maxKeepingNan(maxAbs[lane], std::fabs(e));
            }
        }
        for (std::size_t lane = 0; lane < kLanes; ++lane) {
            sumRef2_ += ref2[lane];
            sumX2_ += x2[lane];
            sumDot_ += dot[lane];
            sumErr2_ += err2[lane];
            maxAbs_ = maxKeepingNan(maxAbs_, double(maxAbs[lane]));
        }
        for (; i < end; ++i) {
            const double r = reference[i];
            const double v = x[i];
            const double e = r - v;
            sumRef2_ += r * r;
            sumX2_ += v * v;
            sumDot_ += r * v;
            sumErr2_ += e * e;
            maxAbs_ = maxKeepingNan(maxAbs_, std::fabs(e));
        }
    }
    count_ += static_cast<int64_t>(n);
}

ErrorMetrics ErrorAccumulator::result() const
{
    constexpr double inf = std::numeric_limits<double>::infinity();
    ErrorMetrics m;
    m.count = count_;
    if (count_ == 0)
        return m;
    m.mse = sumErr2_ / double(count_);
    m.maxAbsError = maxAbs_;
    if (sumErr2_ == 0)
        m.sqnrDb = inf;
    else if (sumRef2_ == 0)
        m.sqnrDb = -inf;
    else
        m.sqnrDb = 10.0 * std::log10(sumRef2_ / sumErr2_);
    if (sumRef2_ == 0 && sumX2_ == 0)
        m.cosine = 1.0;
    else if (sumRef2_ == 0 || sumX2_ == 0)
        m.cosine = 0.0;
    else
        m.cosine = sumDot_ / (std::sqrt(sumRef2_) * std::sqrt(sumX2_));
    if (sumErr2_ == 0)
        m.relativeL2 = 0;
    else
        m.relativeL2 = sumRef2_ == 0 ? inf : std::sqrt(sumErr2_ / sumRef2_);
    return m;
}

ErrorMetrics computeErrorMetrics(const float* x, const float* reference, std::size_t n)
{
    ErrorAccumulator accumulator;
    accumulator.add(x, reference, n);
    return accumulator.result();
}

ErrorMetrics computeErrorMetrics(const std::vector<float>& x, const std::vector<float>& reference)
{
    return computeErrorMetrics(x.data(), reference.data(), std::min(x.size(), reference.size()));
}

double klDivergence(const std::vector<float>& p, const std::vector<float>& q)
{
    double kl = 0;
    for (std::size_t i = 0; i < std::min(p.size(), q.size()); ++i) {
        if (p[i] <= 0)
            continue;
        kl += double(p[i]) * (std::log(double(p[i])) - std::log(std::max(double(q[i]), 1e-30)));
    }
    return kl;
}

} // namespace scalescope
