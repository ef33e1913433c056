#pragma once
// Error metrics between a run and its reference (docs/ARCHITECTURE.md "Comparison metrics"), accumulated in
// double precision.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace scalescope {

// The larger of a and b, NaN when either is NaN. std::max(a, NaN) returns a, so a maximum taken
// with it over values holding NaN reports the finite part and hides the NaN (a max_abs_error of
// 0.0 for a run whose outputs are all NaN).
template <typename T>
inline T maxKeepingNan(T a, T b)
{
    return (a > b || a != a) ? a : b;
}

struct ErrorMetrics {
    int64_t count = 0;
    double mse = 0;
    double sqnrDb = 0;        // 10 log10(sum ref^2 / sum (ref - x)^2); +inf when identical
    double cosine = 0;        // -1..1; 1 when identical (both zero too)
    double maxAbsError = 0;
    double relativeL2 = 0;    // ||ref - x|| / ||ref||; 0 when identical, +inf when ref is zero and x is not
};

// Running sums, so that a metric can be accumulated over several pieces (rows, windows).
class ErrorAccumulator {
public:
    void add(const float* x, const float* reference, std::size_t n);
    ErrorMetrics result() const;

private:
    int64_t count_ = 0;
    double sumRef2_ = 0, sumX2_ = 0, sumDot_ = 0, sumErr2_ = 0, maxAbs_ = 0;
};

ErrorMetrics computeErrorMetrics(const float* x, const float* reference, std::size_t n);
ErrorMetrics computeErrorMetrics(const std::vector<float>& x, const std::vector<float>& reference);

// KL(p || q) in nats over two distributions; q entries are floored at 1e-30 to stay finite.
double klDivergence(const std::vector<float>& p, const std::vector<float>& q);

} // namespace scalescope
