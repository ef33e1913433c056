#pragma once
// The machine's attainable GEMM rates at the forward's shapes, for benchmarks and About, and the
// float32 layer timing the float GEMM choice is made by (float_gemm.h).
#include <cstdint>

#include "engine/float_gemm.h"

namespace scalescope {

// Times a float32 [m x k] x [k x n] matmul through the engine's float32 GEMM (float_gemm.h, the
// path chosen now) and returns the best GFLOP/s over `repeats` runs.
double measureMatmulGflops(int64_t m, int64_t n, int64_t k, int repeats);

// The same for attention's per-head products (float_gemm.h floatBatchedMatmul): `batch` products of
// [m x k] x [k x n], or x [n x k]^T when transposedB (the scores, q k^T; the context is p v).
double measureHeadsMatmulGflops(int64_t batch, int64_t m, int64_t k, int64_t n, bool transposedB, int repeats);

// The same for the FP8 GEMM alone (fp8_gemm.h Fp8FactoredGemm::multiply on random codes, sources
// of the path fp8 mode takes now; the float32 GEMM when that path is Float32): the bare rate an
// fp8 forward's Linears can reach, without quantization or epilogue.
double measureFp8GemmGflops(int64_t m, int64_t n, int64_t k, int repeats);

// `layers` float32 encoder layers at these widths, one after another as a forward runs them, with
// their products on `path`: the fused q/k/v Linear, attention over heads of 64 channels (one head
// when 64 does not divide `hidden`), the output, intermediate and output Linears, and between them
// the element-wise work the forward runs (scale and mask, softmax, residual sums, LayerNorms, GELU
// in LibTorch; the scan of every module output) on the threads the current placement gives it
// (compute_threads.h). Returns the best rate over `repeats` runs in GFLOP/s of the layers'
// products, so the element-wise work counts as time: which GEMM leaves LibTorch the threads decides
// a forward as much as the bare GEMM rate does.
double measureFloatLayerGflops(FloatGemmPath path, int64_t hidden, int64_t intermediate, int64_t rows, int layers,
                               int repeats);

} // namespace scalescope
