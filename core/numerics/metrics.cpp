#include "numerics/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace scalescope {

void ErrorAccumulator::add(const float* x, const float* reference, std::size_t n)
{
    for (std::size_t i = 0; i < n; ++i) {
        const double r = reference[i];
        const double v = x[i];
        const double e = r - v;
        sumRef2_ += r * r;
        sumX2_ += v * v;
        sumDot_ += r * v;
        sumErr2_ += e * e;
        maxAbs_ = std::max(maxAbs_, std::fabs(e));
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
