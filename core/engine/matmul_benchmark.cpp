// LibTorch: times the GEMMs the engine's Linears use (float_gemm.h, fp8_gemm.h), alone and inside
// a float32 layer.
#include "engine/matmul_benchmark.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "engine/activation_kernels.h"
#include "engine/float_gemm.h"
#include "engine/fp8_gemm.h"

namespace scalescope {
namespace {

// The best rate of `run` over `repeats` runs after a warm-up (the primitive is made on first use).
double bestGflops(double flops, int repeats, const std::function<void()>& run)
{
    run();
    double best = 0;
    for (int i = 0; i < std::max(1, repeats); ++i) {
        const auto start = std::chrono::steady_clock::now();
        run();
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        best = std::max(best, flops / std::max(seconds, 1e-9) / 1e9);
    }
    return best;
}

double bestGflops(int64_t m, int64_t n, int64_t k, int repeats, const std::function<void()>& run)
{
    return bestGflops(2.0 * double(m) * double(n) * double(k), repeats, run);
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

double measureHeadsMatmulGflops(int64_t batch, int64_t m, int64_t k, int64_t n, bool transposedB, int repeats)
{
    at::NoGradGuard noGrad;
    at::Tensor a = at::rand({batch, m, k}, at::kFloat);
    at::Tensor b = transposedB ? at::rand({batch, n, k}, at::kFloat) : at::rand({batch, k, n}, at::kFloat);
    at::Tensor c = at::empty({batch, m, n}, at::kFloat);
    return bestGflops(2.0 * double(batch) * double(m) * double(n) * double(k), repeats, [&] {
        floatBatchedMatmul(a.data_ptr<float>(), b.data_ptr<float>(), batch, m, k, n, transposedB, c.data_ptr<float>());
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

double measureFloatLayerGflops(FloatGemmPath path, int64_t hidden, int64_t intermediate, int64_t rows, int layers,
                               int repeats)
{
    at::NoGradGuard noGrad;
    layers = std::max(1, layers);
    const int64_t heads = hidden % 64 == 0 ? hidden / 64 : 1, headDim = hidden / heads;
    // Its own generator: the global one may be seeded by the caller for something else.
    at::Generator generator = at::detail::createCPUGenerator(11);
    auto random = [&](at::IntArrayRef shape, double scale) { return at::randn(shape, generator, at::kFloat) * scale; };
    const at::Tensor inputs = random({rows, hidden}, 1.0), qkvWeight = random({3 * hidden, hidden}, 0.05),
                     outputWeight = random({hidden, hidden}, 0.05), upWeight = random({intermediate, hidden}, 0.05),
                     downWeight = random({hidden, intermediate}, 0.05), bias = random({3 * std::max(hidden, intermediate)}, 0.1),
                     normWeight = at::ones({hidden}, at::kFloat), normBias = at::zeros({hidden}, at::kFloat),
                     keyMask = at::zeros({rows}, at::kFloat);
    // Every module output is scanned as the forward scans it (activation_kernels.h scanOutput).
    auto scanned = [&](const at::Tensor& y) {
        scanOutput(y.data_ptr<float>(), y.size(0), y.size(1), y.stride(0), {});
        return y;
    };
    auto linear = [&](const at::Tensor& x, const at::Tensor& weight) {
        at::Tensor y = at::empty({rows, weight.size(0)}, at::kFloat);
        floatLinearOn(path, x.data_ptr<float>(), rows, x.size(1), weight.data_ptr<float>(), weight.size(0),
                      bias.data_ptr<float>(), y.data_ptr<float>());
        return scanned(y);
    };
    auto splitHeads = [&](const at::Tensor& t) { return t.view({rows, heads, headDim}).transpose(0, 1).contiguous(); };
    auto batched = [&](const at::Tensor& a, const at::Tensor& b, bool transposedB) {
        const int64_t n = transposedB ? b.size(1) : b.size(2);
        at::Tensor c = at::empty({heads, rows, n}, at::kFloat);
        floatBatchedMatmulOn(path, a.data_ptr<float>(), b.data_ptr<float>(), heads, rows, a.size(2), n, transposedB,
                             c.data_ptr<float>());
        return c;
    };
    auto layer = [&](const at::Tensor& h) {
        const at::Tensor qkv = linear(h, qkvWeight);
        const at::Tensor q = splitHeads(qkv.narrow(1, 0, hidden)), k = splitHeads(qkv.narrow(1, hidden, hidden)),
                         v = splitHeads(qkv.narrow(1, 2 * hidden, hidden));
        const at::Tensor probabilities =
            at::softmax(at::add(keyMask, batched(q, k, true), 1.0 / std::sqrt(double(headDim))), -1);
        const at::Tensor attended = batched(probabilities, v, false).transpose(0, 1).reshape({rows, hidden});
        scanned(attended);
        const at::Tensor afterAttention =
            scanned(at::layer_norm(linear(attended, outputWeight) + h, {hidden}, normWeight, normBias, 1e-5));
        const at::Tensor intermediateOut = at::gelu(linear(afterAttention, upWeight));
        return scanned(
            at::layer_norm(linear(intermediateOut, downWeight) + afterAttention, {hidden}, normWeight, normBias, 1e-5));
    };
    const double flops = layers * (2.0 * double(rows) * (4.0 * hidden * hidden + 2.0 * hidden * intermediate) +
                         2.0 * 2.0 * double(rows) * double(rows) * double(hidden));
    return bestGflops(flops, repeats, [&] {
        at::Tensor x = inputs;
        for (int i = 0; i < layers; ++i)
            x = layer(x);
    });
}

} // namespace scalescope
