#pragma once
// FP8 activation kernels of `fp8` mode on plain float rows: quantize-dequantize a Linear's input as
// docs/ARCHITECTURE.md defines it (dynamic per token, per group of channels, dynamic or static per tensor), and the shares of
// clipped, flushed and subnormal values of that input. Torch-free. The quantizers make each row in
// one pass (its amax, then the rounding, in vector lanes) and spread rows over the compute threads
// between GEMMs (compute_threads.h parallelFor): on a CPU without bf16 the float32 FP8 path runs
// them on every Linear input, so they are as hot there as the bf16 path's.
#include <cstdint>
#include <vector>

#include "model/inference_backend.h"

namespace scalescope {

// Writes quantdequant(src) to dst ([rows, features], row-major) and returns the scale of each row
// (the same for every row of a per-tensor scheme). `staticScale` is used by StaticPerTensor.
// DynamicPerGroup returns one scale per run instead, row by row: [rows, runsPerRow(features, groupSize)];
// with `mxfp8Scales` a run's scale is MXFP8's power of two (mx::activationScale) instead of amax / 448.
std::vector<float> quantDequantActivations(const float* src, float* dst, int64_t rows, int64_t features,
                                           ActivationQuantization scheme, float staticScale, int64_t groupSize = 0,
                                           bool mxfp8Scales = false);

// Runs of groupSize channels in a row of `features`, the last one shorter when groupSize does not divide it.
int64_t runsPerRow(int64_t features, int64_t groupSize);

// The same quantization, but dst receives the E4M3 values of x / s without the scale (what the
// bf16 GEMM of fp8_gemm.h multiplies); quantDequantActivations' dst is these times the row scale.
// Only per-token and per-tensor schemes (their scales factor out); DynamicPerGroup throws std::logic_error.
std::vector<float> quantizeActivationValues(const float* src, float* dst, int64_t rows, int64_t features,
                                            ActivationQuantization scheme, float staticScale);

// quantizeActivationValues written as bfloat16 bits (exact, see fp8::quantizeToE4M3Bf16) in one
// pass per row, rows spread over the compute threads: what the bf16 GEMM reads, made without the
// float copy in between. Same scales, same values; DynamicPerGroup throws std::logic_error.
std::vector<float> quantizeActivationsToBf16(const float* src, uint16_t* dst, int64_t rows, int64_t features,
                                             ActivationQuantization scheme, float staticScale);

// Statistics of one Linear's input over the rows `isReal` marks (all rows when it is empty):
// quantized is dst of quantDequantActivations (or of quantizeActivationValues when
// `quantizedAreValues`), scales their result (per run when groupSize > 0; group activations are
// never quantized to values, see quantizeActivationValues).
ActivationStatistics countActivationStatistics(const std::string& module, const float* src, const float* quantized,
                                               int64_t rows, int64_t features, const std::vector<float>& scales,
                                               const std::vector<uint8_t>& isReal, int64_t groupSize = 0,
                                               bool quantizedAreValues = false);
// The same for the bf16 path: quantizedValues are the E4M3 values as bfloat16 bits
// (quantizeActivationsToBf16), read in place.
ActivationStatistics countActivationStatisticsBf16(const std::string& module, const float* src,
                                                   const uint16_t* quantizedValues, int64_t rows, int64_t features,
                                                   const std::vector<float>& scales, const std::vector<uint8_t>& isReal);

// One module output over the rows `isReal` marks (all when empty); consecutive rows start
// `rowStride` floats apart, so a column slice of a wider matrix is scanned in place. NaN is not a
// magnitude: maxAbs is over the other values (inf included).
struct OutputScan {
    int64_t nonFinite = 0;       // inf or NaN
    float maxAbs = 0;
    int64_t belowHalfNormal = 0; // 0 < |x| < 2^-14: subnormal or flushed on a float16 device
    int64_t elements = 0;
};
OutputScan scanOutput(const float* src, int64_t rows, int64_t features, int64_t rowStride,
                      const std::vector<uint8_t>& isReal);
// scanOutput of rows [begin, end) alone, on the calling thread: for a pass that has just written
// those rows (the FP8 GEMM's epilogue) to scan them while they are in cache. Scans of disjoint
// row ranges combine with combineScans, in any order, to scanOutput's result over their union.
OutputScan scanOutputRows(const float* src, int64_t begin, int64_t end, int64_t features, int64_t rowStride,
                          const std::vector<uint8_t>& isReal);
void combineScans(OutputScan& into, const OutputScan& part);

// Whether row `row` (rowStride apart) holds an inf or NaN.
bool rowHasNonFinite(const float* src, int64_t row, int64_t features, int64_t rowStride);

// max |x| over the rows `isReal` marks (all when empty).
float realRowsAmax(const float* src, int64_t rows, int64_t features, const std::vector<uint8_t>& isReal);

} // namespace scalescope
