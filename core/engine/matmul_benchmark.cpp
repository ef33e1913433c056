// LibTorch: times the GEMMs the engine's Linears use (float_gemm.h, fp8_gemm.h).
#include "engine/matmul_benchmark.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <random>
#include <vector>

#include "engine/float_gemm.h"
#include "engine/fp8_gemm.h"

namespace scalescope {
namespace {

double bestGflops(int64_t m, int64_t n, int64_t k, int repeats, const std::function<void()>& run)
{
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

} // namespace

double measureMatmulGflops(int64_t m, int64_t n, int64_t k, int repeats)
{
    at::NoGradGuard noGrad;
    at::Tensor a = at::rand({m, k}, at::kFloat);
    at::Tensor b = at::rand({n, k}, at::kFloat); // [out, in] like a Linear weight
    at::Tensor c = at::empty({m, n}, at::kFloat);
    return bestGflops(m, n, k, repeats, [&] {
        floatLinear(a.data_ptr<float>(), m, k, b.data_ptr<float>(), n, nullptr, c.data_ptr<float>());
    });
}

double measureFp8GemmGflops(int64_t m, int64_t n, int64_t k, int repeats)
{
    const Fp8GemmPath path = fp8GemmPath();
    if (path == Fp8GemmPath::Float32)
        return measureMatmulGflops(m, n, k, repeats);
    std::mt19937 random(3);
    std::vector<uint8_t> codes(static_cast<std::size_t>(n * k));
    for (uint8_t& code : codes)
        code = static_cast<uint8_t>(random() % 0x7E); // positive finite E4M3 codes
    const Fp8FactoredGemm gemm("bench", codes.data(), n, k, std::vector<float>(static_cast<std::size_t>(n), 1.0f), {},
                               path);
    // One E4M3 value (1.0) in every element, in the sources' type: bf16 0x3F80 or float32 1.0.
    std::vector<uint16_t> bf16(static_cast<std::size_t>(m * k), 0x3F80);
    std::vector<float> float32(gemm.readsBf16() ? 0 : static_cast<std::size_t>(m * k), 1.0f);
    std::vector<float> y(static_cast<std::size_t>(m * n));
    const void* values = gemm.readsBf16() ? static_cast<const void*>(bf16.data()) : float32.data();
    return bestGflops(m, n, k, repeats, [&] { gemm.multiply(values, m, y.data()); });
}

} // namespace scalescope
