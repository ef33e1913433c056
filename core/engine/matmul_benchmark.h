#pragma once
// The machine's attainable GEMM rates at the forward's shapes, for benchmarks and About.
#include <cstdint>

namespace scalescope {

// Times a float32 [m x k] x [k x n] matmul through the engine's float32 GEMM (float_gemm.h, the
// path chosen now) and returns the best GFLOP/s over `repeats` runs.
double measureMatmulGflops(int64_t m, int64_t n, int64_t k, int repeats);

// The same for the FP8 GEMM alone (fp8_gemm.h Fp8FactoredGemm::multiply on random codes, sources
// of the path fp8 mode takes now; the float32 GEMM when that path is Float32): the bare rate an
// fp8 forward's Linears can reach, without quantization or epilogue.
double measureFp8GemmGflops(int64_t m, int64_t n, int64_t k, int repeats);

} // namespace scalescope
