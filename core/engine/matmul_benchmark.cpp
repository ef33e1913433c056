// LibTorch: times the same at::linear the engine's Linears use.
#include "engine/matmul_benchmark.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>

namespace scalescope {

double measureMatmulGflops(int64_t m, int64_t n, int64_t k, int repeats)
{
    at::NoGradGuard noGrad;
    at::Tensor a = at::rand({m, k}, at::kFloat);
    at::Tensor b = at::rand({n, k}, at::kFloat); // [out, in] like a Linear weight
    at::Tensor warm = at::linear(a, b);
    double best = 0;
    for (int i = 0; i < std::max(1, repeats); ++i) {
        const auto start = std::chrono::steady_clock::now();
        at::Tensor c = at::linear(a, b);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        best = std::max(best, 2.0 * double(m) * double(n) * double(k) / seconds / 1e9);
    }
    return best;
}

} // namespace scalescope
