#pragma once
// Element-wise kernels that run inside a pass which already holds the values in cache, instead of
// a pass of their own over a fresh tensor: GELU on the intermediate Linear's output, applied by the
// factored FP8 GEMM's epilogue right after it wrote and scanned each chunk of rows; the attention's
// masked, scaled softmax, one row at a time on the scores' GEMM output; the residual sum with the
// LayerNorm after it. One version per instruction set, as output_scan_lanes.h: each kernel takes
// AVX-512 where this build has it and the CPU runs it (scan_lanes::avx512Available), else AVX2
// (avx2Available), else the portable version (SSE2); all stay callable so that tests check each.
// The AVX2 and AVX-512 versions fuse multiplies and adds into FMAs (a third fewer operations) and
// SSE2 has none, so the versions may differ in the last bits, each within the bounds below; on one
// machine the same version always runs, so a forward's values do not depend on where in it a
// kernel ran.
#include <cstdint>

namespace scalescope::fused_lanes {

// GELU as torch.nn.functional.gelu's default (the exact, erf form): x * Phi(x) =
// 0.5 x erfc(-x / sqrt(2)), in place on `count` floats. Relative to float64's value: within 4e-7
// for x >= 0 (a few float32 ulps), 2e-6 for -3 <= x < 0, 4e-5 below -3 (where |GELU(x)| < 0.005
// and the exponent's own rounding dominates); below about -13.1, where |GELU(x)| < 2e-38, it
// flushes to zero (e^-z^2 is no normal float there). +inf stays +inf, -inf and NaN become NaN (as in
// float64), and a finite input gives a finite output, so a row's inf/NaN count is kept.
void gelu(float* values, int64_t count);
// The same on every x86-64 CPU (SSE2's four lanes at a time).
void portableGelu(float* values, int64_t count);
// Eight lanes in one AVX2 register, with FMA; call only when avx2Available().
void avx2Gelu(float* values, int64_t count);
// Sixteen lanes in one AVX-512 register; call only when scan_lanes::avx512Available().
void avx512Gelu(float* values, int64_t count);
// Whether this build has the AVX2 versions and the CPU runs them (AVX2 and FMA).
bool avx2Available();

// softmax(mask + scale * scores) along each of `rows` rows of `width` scores, in place, one row at
// a time in cache (instead of a pass for the mask and scale, then softmax's own over a new tensor):
// torch.softmax's formula, e^(s - max s) / sum, the sum in float32. `mask` is the additive key
// mask of these rows ([width]: 0, or the lowest float for a padding key). Each probability within
// 1e-6 of float64's softmax of the same masked scores, relative, plus 1.2e-7 per unit of its
// distance below the row's maximum (the rounding of s - max); probabilities under FLT_MIN flush to
// zero. A row holding NaN, or +inf, becomes NaN, as torch's does.
void maskedSoftmax(float* scores, int64_t rows, int64_t width, float scale, const float* mask);
void portableMaskedSoftmax(float* scores, int64_t rows, int64_t width, float scale, const float* mask);
void avx2MaskedSoftmax(float* scores, int64_t rows, int64_t width, float scale, const float* mask);
void avx512MaskedSoftmax(float* scores, int64_t rows, int64_t width, float scale, const float* mask);

// LayerNorm(x + residual) along each of `rows` rows of `width`, into `out` (which may be x): as
// torch's layer_norm of the sum, (s - mean) / sqrt(biased variance + epsilon) * gamma + beta, the
// mean and variance in float32 from two passes over the row, in one go per row while it is in
// cache (instead of a pass for the sum into a new tensor, then LibTorch's). Within 1e-5 of float64's
// value relative to |gamma| (|normalized| + 1) + |beta|.
void addLayerNorm(const float* x, const float* residual, const float* gamma, const float* beta, float epsilon,
                  int64_t rows, int64_t width, float* out);
void portableAddLayerNorm(const float* x, const float* residual, const float* gamma, const float* beta, float epsilon,
                          int64_t rows, int64_t width, float* out);
void avx2AddLayerNorm(const float* x, const float* residual, const float* gamma, const float* beta, float epsilon,
                      int64_t rows, int64_t width, float* out);
void avx512AddLayerNorm(const float* x, const float* residual, const float* gamma, const float* beta, float epsilon,
                        int64_t rows, int64_t width, float* out);

} // namespace scalescope::fused_lanes
