#pragma once
// The machine's attainable GEMM rate for the forward's shapes, for benchmarks and About.
#include <cstdint>

namespace scalescope {

// Times a float32 [m x k] x [k x n] matmul through the engine's BLAS and returns the best GFLOP/s
// over `repeats` runs.
double measureMatmulGflops(int64_t m, int64_t n, int64_t k, int repeats);

} // namespace scalescope
