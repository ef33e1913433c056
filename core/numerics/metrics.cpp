#include "numerics/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/parallel_chunks.h"

namespace scalescope {

namespace {

// A full comparison feeds ~10^8 values through here, so the inner loop works on eight float lanes
// the compiler vectorises, over blocks short enough (1024 values) that float sums stay accurate to
// ~1e-6 relative; the blocks are then added up in double, in order.
constexpr std::size_t kLanes = 8;
constexpr std::size_t kBlock = 1024;
// From this many blocks on, the blocks' lane sums are made on the compute threads.
constexpr std::size_t kParallelBlocks = 64;

// One block's float lane sums; values [tailBegin, end) past the last whole lane group are left for
// the double-precision fold.
struct BlockSums {
    float ref2[kLanes] = {}, x2[kLanes] = {}, dot[kLanes] = {}, err2[kLanes] = {}, maxAbs[kLanes] = {};
    std::size_t tailBegin = 0, end = 0;
};

BlockSums sumBlock(const float* x, const float* reference, std::size_t begin, std::size_t end)
{
    BlockSums sums;
    std::size_t i = begin;
    for (; i + kLanes <= end; i += kLanes) {
        for (std::size_t lane = 0; lane < kLanes; ++lane) {
            const float r = reference[i + lane];
            const float v = x[i + lane];
            const float e = r - v;
            sums.ref2[lane] += r * r;
            sums.x2[lane] += v * v;
            sums.dot[lane] += r * v;
            sums.err2[lane] += e * e;
            sums.maxAbs[lane] = maxKeepingNan(sums.maxAbs[lane], std::fabs(e));
        }
    }
    sums.tailBegin = i;
    sums.end = end;
    return sums;
}

} // namespace

// Blocks are summed independently (on the compute threads for long inputs) and folded here one
// after another in block order, so the result is the same bit for bit however the blocks were spread.
void ErrorAccumulator::add(const float* x, const float* reference, std::size_t n)
{
    const std::size_t blocks = (n + kBlock - 1) / kBlock;
    auto blockAt = [&](std::size_t block) {
        return sumBlock(x, reference, block * kBlock, std::min(n, (block + 1) * kBlock));
    };
    auto fold = [&](const BlockSums& sums) {
        for (std::size_t lane = 0; lane < kLanes; ++lane) {
            sumRef2_ += sums.ref2[lane];
            sumX2_ += sums.x2[lane];
            sumDot_ += sums.dot[lane];
            sumErr2_ += sums.err2[lane];
            maxAbs_ = maxKeepingNan(maxAbs_, double(sums.maxAbs[lane]));
        }
        for (std::size_t i = sums.tailBegin; i < sums.end; ++i) {
            const double r = reference[i];
            const double v = x[i];
            const double e = r - v;
            sumRef2_ += r * r;
            sumX2_ += v * v;
            sumDot_ += r * v;
            sumErr2_ += e * e;
            maxAbs_ = maxKeepingNan(maxAbs_, std::fabs(e));
        }
    };
    if (blocks < kParallelBlocks) {
        for (std::size_t block = 0; block < blocks; ++block)
            fold(blockAt(block));
    } else {
        std::vector<BlockSums> sums(blocks);
        runChunks(static_cast<int64_t>(blocks), [&](int64_t begin, int64_t end) {
            for (int64_t block = begin; block < end; ++block)
                sums[static_cast<std::size_t>(block)] = blockAt(static_cast<std::size_t>(block));
        });
        for (const BlockSums& block : sums)
            fold(block);
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
    // Identical values are 1 exactly, and rounding never takes a cosine past +-1: the quotient of
    // two sums can land an ulp either side (a threshold of 1.0000000000000002, which no run met).
    if (sumErr2_ == 0 || (sumRef2_ == 0 && sumX2_ == 0))
        m.cosine = 1.0;
    else if (sumRef2_ == 0 || sumX2_ == 0)
        m.cosine = 0.0;
    else
        m.cosine = std::clamp(sumDot_ / (std::sqrt(sumRef2_) * std::sqrt(sumX2_)), -1.0, 1.0);
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
