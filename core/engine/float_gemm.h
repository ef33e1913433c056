#pragma once
// Float32 Linears, y = x W^T + b, and attention's per-head products through oneDNN's matmul.
// Every float32 Linear of the engine runs
// here (the reference model, dequant and fp16 modes, float overrides, unquantized Linears): at the
// forward's shapes oneDNN's AVX-512 kernel outran LibTorch's at::linear on OpenBLAS on the machine
// we measured (scalescope-bench, "bare GEMM"), and float-heavy runs are most of a sensitivity sweep.
// The weight is read in place in a Linear's own [out, in] layout: no packed copy, so a model's
// memory does not double.
//
// Numerics: each output is a float32 accumulation of float32 products, as any float32 GEMM; only
// the summation order is oneDNN's. Torch-free; errors throw scalescope::Error.
#include <cstdint>

namespace scalescope {

// x: [rows, in] row-major; weight: [out, in] row-major; bias: `out` values or null;
// y: [rows, out] row-major, written.
void floatLinear(const float* x, int64_t rows, int64_t in, const float* weight, int64_t out, const float* bias, float* y);

// c[i] = a[i] b[i] (or a[i] b[i]^T when transposedB) for i < batch, float32: attention's per-head
// products. a: [batch, m, k]; b: [batch, k, n], or [batch, n, k] when transposedB; c: [batch, m, n];
// all row-major and contiguous.
void floatBatchedMatmul(const float* a, const float* b, int64_t batch, int64_t m, int64_t k, int64_t n, bool transposedB,
                        float* c);

} // namespace scalescope
