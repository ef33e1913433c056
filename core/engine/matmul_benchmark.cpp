// LibTorch: times the float32 GEMM the engine's float Linears use (float_gemm.h).
#include "engine/matmul_benchmark.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>

#include "engine/float_gemm.h"

namespace scalescope {

double measureMatmulGflops(int64_t m, int64_t n, int64_t k, int repeats)
{
    at::NoGradGuard noGrad;
    at::Tensor a = at::rand({m, k}, at::kFloat);
    at::Tensor b = at::rand({n, k}, at::kFloat); // [out, in] like a Linear weight
    at::Tensor c = at::empty({m, n}, at::kFloat);
    auto run = [&] { floatLinear(a.data_ptr<float>(), m, k, b.data_ptr<float>(), n, nullptr, c.data_ptr<float>()); };
    run(); // warm-up: the primitive is made on first use
    double best = 0;
    for (int i = 0; i < std::max(1, repeats); ++i) {
        const auto start = std::chrono::steady_clock::now();
        run();
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        best = std::max(best, 2.0 * double(m) * double(n) * double(k) / seconds / 1e9);
    }
    return best;
}

} // namespace scalescope
